package volume

import (
	"context"
	"time"
)

// SetUpObserver hears of each volume SetUpPod set up (or failed to): its
// name, plugin and when its set-up began.
type SetUpObserver func(name, plugin string, start time.Time, err error)

type observerKey struct{}

// WithSetUpObserver has SetUpPod calls under ctx report each volume to
// fn: the caller decides per call (a pod's start, not its refreshes)
// whether the set-ups are traced.
func WithSetUpObserver(ctx context.Context, fn SetUpObserver) context.Context {
	return context.WithValue(ctx, observerKey{}, fn)
}

func observe(ctx context.Context, name, plugin string, start time.Time, err error) {
	if fn, ok := ctx.Value(observerKey{}).(SetUpObserver); ok {
		fn(name, plugin, start, err)
	}
}
