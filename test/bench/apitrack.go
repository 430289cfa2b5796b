package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	watchtools "k8s.io/client-go/tools/watch"
)

// apiTracker follows the pods of one namespace on a single watch (resumed
// from the last resource version if the server ends it) and records, per
// pod name, when the watch first showed it bound to a node, Running, and
// deleted, and whether it ended (Failed or Succeeded). The times are when
// the event arrived in this process.
type apiTracker struct {
	mu      sync.Mutex
	pods    map[string]*apiSeen
	changed chan struct{} // closed and replaced on every change
	err     error         // the watch ended with this
}

type apiSeen struct {
	node    string
	bound   time.Time
	running time.Time
	gone    time.Time
	ended   string // phase and reason once Failed or Succeeded
}

// Conditions for wait: whether the pod is there yet, or an error when it
// never will be.

func isBound(s *apiSeen) (bool, error) { return !s.bound.IsZero(), nil }
func isGone(s *apiSeen) (bool, error)  { return !s.gone.IsZero(), nil }

func isRunning(s *apiSeen) (bool, error) {
	if s.running.IsZero() && s.ended != "" {
		return false, errors.New(s.ended)
	}
	return !s.running.IsZero(), nil
}

// podWatcher adapts a typed pod client to the RetryWatcher.
type podWatcher struct{ pods typedcorev1.PodInterface }

func (w podWatcher) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	return w.pods.Watch(ctx, o)
}

// trackPods starts following namespace ns; it stops when ctx ends.
func trackPods(ctx context.Context, cs kubernetes.Interface, ns string) (*apiTracker, error) {
	pods := cs.CoreV1().Pods(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, podWatcher{pods})
	if err != nil {
		return nil, err
	}
	t := &apiTracker{pods: map[string]*apiSeen{}, changed: make(chan struct{})}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				t.fail(ctx.Err())
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					t.fail(fmt.Errorf("watch of pods in %s closed", ns))
					return
				}
				if ev.Type == watch.Error {
					t.fail(fmt.Errorf("watch of pods in %s: %v", ns, ev.Object))
					return
				}
				if p, ok := ev.Object.(*v1.Pod); ok {
					t.record(ev.Type, p, time.Now())
				}
			}
		}
	}()
	return t, nil
}

func (t *apiTracker) record(typ watch.EventType, p *v1.Pod, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.pods[p.Name]
	if s == nil {
		s = &apiSeen{}
		t.pods[p.Name] = s
	}
	if p.Spec.NodeName != "" && s.bound.IsZero() {
		s.node, s.bound = p.Spec.NodeName, at
	}
	switch p.Status.Phase {
	case v1.PodRunning:
		if s.running.IsZero() {
			s.running = at
		}
	case v1.PodFailed, v1.PodSucceeded:
		if s.ended == "" {
			s.ended = fmt.Sprintf("%s: %s %s", p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
	}
	if typ == watch.Deleted && s.gone.IsZero() {
		s.gone = at
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *apiTracker) fail(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil {
		t.err = err
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// wait returns what the watch saw of the named pods once cond holds for
// every one. It fails at once when cond fails for a pod, and after timeout
// saying for how many it held.
func (t *apiTracker) wait(ctx context.Context, names []string, what string, cond func(*apiSeen) (bool, error), timeout time.Duration) (map[string]apiSeen, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		t.mu.Lock()
		got := make(map[string]apiSeen, len(names))
		var errs []error
		for _, n := range names {
			s := t.pods[n]
			if s == nil {
				continue
			}
			ok, err := cond(s)
			if ok {
				got[n] = *s
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("pod %s: %w", n, err))
			}
		}
		changed, err := t.changed, t.err
		t.mu.Unlock()
		if len(errs) > 0 {
			return nil, fmt.Errorf("%d of %d pods %s; %w", len(got), len(names), what, errors.Join(errs...))
		}
		if len(got) == len(names) {
			return got, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%d of %d pods %s: %w", len(got), len(names), what, err)
		}
		select {
		case <-changed:
		case <-timer.C:
			return nil, fmt.Errorf("%d of %d pods %s after %s", len(got), len(names), what, timeout)
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d pods %s: %w", len(got), len(names), what, ctx.Err())
		}
	}
}

// apiCreates is when each Create was sent and when it returned.
type apiCreates struct {
	sent, returned []time.Time
}

// createPods creates the pods from clients goroutines at once, recording
// each request's start and end; it stops at the first error.
func createPods(ctx context.Context, cs kubernetes.Interface, ns string, pods []*v1.Pod, clients int, timeout time.Duration) (apiCreates, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := apiCreates{sent: make([]time.Time, len(pods)), returned: make([]time.Time, len(pods))}
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	for range min(clients, len(pods)) {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pods) {
					return nil
				}
				c.sent[i] = time.Now()
				if _, err := cs.CoreV1().Pods(ns).Create(gctx, pods[i], metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("create pod %s/%s: %w", ns, pods[i].Name, err)
				}
				c.returned[i] = time.Now()
			}
		})
	}
	return c, g.Wait()
}
