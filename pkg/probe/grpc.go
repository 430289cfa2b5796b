package probe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// GRPC asks the standard health service (grpc.health.v1.Health/Check) at
// host:port about service over plaintext: SERVING succeeds, anything else
// fails with upstream's messages.
func GRPC(ctx context.Context, host string, port int, service string, timeout time.Duration) (Outcome, string, error) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithUserAgent(UserAgent))
	if err != nil {
		return OutcomeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err), nil
	}
	defer conn.Close()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service}, grpc.WaitForReady(false))
	if err != nil {
		return OutcomeFailure, grpcFailure(addr, timeout, err), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return OutcomeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String()), nil
	}
	return OutcomeSuccess, "", nil
}

func grpcFailure(addr string, timeout time.Duration, err error) string {
	s, _ := status.FromError(err)
	switch {
	case s.Code() == codes.Unimplemented:
		return fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", s.Message())
	case s.Code() == codes.DeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
	case s.Code() == codes.Unavailable:
		return fmt.Sprintf("error: failed to connect service at %q: %s", addr, s.Message())
	}
	return fmt.Sprintf("error: health rpc probe failed: %v", err)
}
