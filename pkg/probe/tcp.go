package probe

import (
	"context"
	"net"
	"strconv"
	"time"
)

// TCP succeeds when a connection to host:port opens within timeout.
func TCP(ctx context.Context, host string, port int, timeout time.Duration) (Outcome, string, error) {
	d := net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return OutcomeFailure, err.Error(), nil
	}
	_ = conn.Close()
	return OutcomeSuccess, "", nil
}
