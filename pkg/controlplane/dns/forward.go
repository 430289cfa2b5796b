package dns

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/miekg/dns"
)

// upstreamTimeout bounds one exchange with one upstream, as the forward
// plugin's read timeout.
const upstreamTimeout = 2 * time.Second

var errNoUpstreams = errors.New("no upstream resolvers")

// forwarder sends queries outside the cluster zone to the upstreams, in
// order, until one answers.
type forwarder struct {
	upstreams []string // IP:port
	udp, tcp  *dns.Client
}

func newForwarder(upstreams []string) *forwarder {
	return &forwarder{
		upstreams: upstreams,
		// The receive buffer takes any EDNS0 answer; the client's own
		// limit is applied when the answer is written back.
		udp: &dns.Client{Net: "udp", Timeout: upstreamTimeout, UDPSize: dns.DefaultMsgSize},
		tcp: &dns.Client{Net: "tcp", Timeout: upstreamTimeout},
	}
}

// forward returns the first upstream's answer to req.
func (f *forwarder) forward(ctx context.Context, req *dns.Msg) (*dns.Msg, error) {
	if len(f.upstreams) == 0 {
		return nil, errNoUpstreams
	}
	var errs []error
	for _, u := range f.upstreams {
		resp, err := f.exchange(ctx, req, u)
		if err == nil {
			return resp, nil
		}
		errs = append(errs, fmt.Errorf("upstream %s: %w", u, err))
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// exchange asks one upstream over UDP and, when the answer is truncated,
// again over TCP for the whole answer.
func (f *forwarder) exchange(ctx context.Context, req *dns.Msg, upstream string) (*dns.Msg, error) {
	resp, _, err := f.udp.ExchangeContext(ctx, req, upstream)
	if err != nil {
		return nil, fmt.Errorf("udp: %w", err)
	}
	if !resp.Truncated {
		return resp, nil
	}
	full, _, err := f.tcp.ExchangeContext(ctx, req, upstream)
	if err != nil {
		// The truncated answer still tells the client to retry over TCP.
		return resp, nil
	}
	return full, nil
}
