package podsource

import (
	"context"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
)

// ContentHashAnnotation is set by the file source and read by the mirror pod
// manager: it changes when a static pod's manifest is edited, while the
// pod's config.hash (its UID) does not, so that a stale mirror pod is
// recreated.
const ContentHashAnnotation = "nodeagent.io/content-hash"

// APIPods is one snapshot of the pods bound to the node: the pods to run
// and the mirror pods of static pods (which are not run).
type APIPods struct {
	Pods    []*v1.Pod
	Mirrors []*v1.Pod
}

// Merger joins the pod sources into the full desired set the pod manager
// takes: the latest set of each source. Static pods go out as soon as the
// file source reports, so they run while the API server is unreachable
// (as the kubelet runs a control plane's own static pods); AllReady tells
// the manager when every source has reported, before which it must not
// remove runtime pods it does not know (they may be API pods).
type Merger struct {
	// OnStatic, when set, receives the static pods and the API's mirror
	// pods after every change of either, once the API has reported (the
	// mirror pod manager).
	OnStatic func(static, mirrors []*v1.Pod)

	ready atomic.Bool
}

// AllReady reports whether every source has reported at least once.
func (m *Merger) AllReady() bool { return m.ready.Load() }

// Run merges until ctx ends. A nil file channel means no static pod
// source. The latest merged set is sent on out; while out is full, newer
// sets replace the pending one.
func (m *Merger) Run(ctx context.Context, file <-chan []*v1.Pod, api <-chan APIPods, out chan<- []*v1.Pod) error {
	var (
		static   []*v1.Pod
		fromAPI  APIPods
		haveFile = file == nil
		haveAPI  bool
		pending  []*v1.Pod
		sendc    chan<- []*v1.Pod // nil until a set is pending
	)
	for {
		select {
		case <-ctx.Done():
			return nil
		case set := <-file:
			static, haveFile = set, true
		case set := <-api:
			fromAPI, haveAPI = set, true
		case sendc <- pending:
			sendc, pending = nil, nil
			continue
		}
		if !haveFile {
			continue
		}
		if haveAPI {
			m.ready.Store(true)
			if m.OnStatic != nil {
				m.OnStatic(static, fromAPI.Mirrors)
			}
		}
		pending = Merge(static, fromAPI.Pods)
		sendc = out
	}
}

// Merge returns the desired set of one static and one API snapshot: static
// pods then API pods, each in its source's order. A pod UID present in both
// is taken from the file (a static pod's UID is its own). Kept free of the
// channels so that the merge rule is tested by itself; the result is a new
// slice sharing the pods.
func Merge(static, api []*v1.Pod) []*v1.Pod {
	out := make([]*v1.Pod, 0, len(static)+len(api))
	seen := make(map[string]bool, len(static))
	for _, p := range static {
		seen[string(p.UID)] = true
		out = append(out, p)
	}
	for _, p := range api {
		if !seen[string(p.UID)] {
			out = append(out, p)
		}
	}
	return out
}
