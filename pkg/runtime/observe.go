package runtime

import (
	"context"
	"time"

	"google.golang.org/grpc"
)

// CallObserver receives every CRI call's full gRPC method name
// ("/runtime.v1.RuntimeService/ListContainers"), duration and error: the
// agent's runtime operation metrics.
type CallObserver func(method string, d time.Duration, err error)

// DialOption configures Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	observe CallObserver
}

// WithCallObserver has every CRI call reported to f. One interceptor sees
// all calls, so no client method can be missed.
func WithCallObserver(f CallObserver) DialOption {
	return func(o *dialOptions) { o.observe = f }
}

func (o dialOptions) grpcOptions() []grpc.DialOption {
	if o.observe == nil {
		return nil
	}
	observe := o.observe
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			start := time.Now()
			err := invoker(ctx, method, req, reply, cc, opts...)
			observe(method, time.Since(start), err)
			return err
		})}
}
