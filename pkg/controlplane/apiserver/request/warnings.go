package request

import (
	"context"
	"net/http"
	"sync"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// warningRecorder puts a request's warnings into Warning response
// headers, as upstream's warning filter does: code 299, agent "-", each
// text once. kubectl prints each as "Warning: <text>".
type warningRecorder struct {
	mu     sync.Mutex
	header http.Header
	seen   map[string]bool
}

type warningsKey struct{}

// WithWarnings gives the request a recorder writing into header; warnings
// must be added before the response status is written.
func WithWarnings(ctx context.Context, header http.Header) context.Context {
	return context.WithValue(ctx, warningsKey{}, &warningRecorder{header: header, seen: map[string]bool{}})
}

// AddWarning records text for the client. Retried updates run admission
// again, hence the deduplication.
func AddWarning(ctx context.Context, text string) {
	rec, ok := ctx.Value(warningsKey{}).(*warningRecorder)
	if !ok || text == "" {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.seen[text] {
		return
	}
	h, err := utilnet.NewWarningHeader(299, "-", text)
	if err != nil {
		return // control characters: upstream drops such warnings too
	}
	rec.seen[text] = true
	rec.header.Add("Warning", h)
}
