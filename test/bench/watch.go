package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
)

// pollEvery is how often the watcher lists running containers;
// pausedPoll how often a wait lists while the poller is paused.
const (
	pollEvery  = 5 * time.Millisecond
	pausedPoll = 100 * time.Millisecond
)

// runningWatch polls CRI ListContainers and remembers, per pod name label,
// the first running container seen and when. It runs during the raw and
// the agent phases alike, so both put the same load on containerd. The
// probes section pauses it while it measures containerd's CPU time.
type runningWatch struct {
	cri    *nart.Client
	paused atomic.Bool
	mu     sync.Mutex
	seen   map[string]sighting // pod name -> first running container
	uids   map[string]bool     // every pod UID seen, for cleaning up cgroups
}

type sighting struct {
	containerID string
	at          time.Time
}

func newRunningWatch(cri *nart.Client) *runningWatch {
	return &runningWatch{cri: cri, seen: map[string]sighting{}, uids: map[string]bool{}}
}

func (w *runningWatch) loop(ctx context.Context) {
	t := time.NewTicker(pollEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !w.paused.Load() {
			w.poll(ctx)
		}
	}
}

// poll lists the running containers once and records the new sightings.
func (w *runningWatch) poll(ctx context.Context) {
	running := &criv1.ContainerFilter{State: &criv1.ContainerStateValue{State: criv1.ContainerState_CONTAINER_RUNNING}}
	cs, err := w.cri.ListContainers(ctx, running)
	if err != nil {
		return
	}
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range cs {
		w.uids[c.Labels[nart.LabelPodUID]] = true
		name := c.Labels[nart.LabelPodName]
		if _, ok := w.seen[name]; !ok && name != "" {
			w.seen[name] = sighting{c.Id, now}
		}
	}
}

// pause stops the polling until resume.
func (w *runningWatch) pause() { w.paused.Store(true) }

func (w *runningWatch) resume() { w.paused.Store(false) }

// addUID remembers a pod UID seen elsewhere (a swept sandbox).
func (w *runningWatch) addUID(uid string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.uids[uid] = true
}

// removePodCgroups deletes the empty pod-level cgroup directories of every
// pod seen during the run (the agent leaves them behind) and says how
// many there were.
func (w *runningWatch) removePodCgroups(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for uid := range w.uids {
		if uid != "" && removePodCgroups(uid) {
			n++
		}
	}
	if n > 0 {
		fmt.Printf("cleanup: removed the cgroup directories of %d pod(s) left under %s/kubepods/besteffort\n", n, cgroupRoot)
	}
	return nil
}

// wait returns the sightings of all named pods once each has a running
// container. While the poller is paused it lists by itself, every
// pausedPoll: a sighting's time then says nothing (the bursts do not use
// it), its container ID is what the caller needs.
func (w *runningWatch) wait(ctx context.Context, names []string, timeout time.Duration) (map[string]sighting, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		if w.paused.Load() {
			w.poll(ctx)
		}
		if got, ok := w.lookup(names); ok {
			return got, nil
		}
		next := time.Millisecond
		if w.paused.Load() {
			next = pausedPoll
		}
		select {
		case <-ctx.Done():
			got, _ := w.lookup(names)
			return nil, fmt.Errorf("%d of %d pods running after %s: %w", len(got), len(names), timeout, ctx.Err())
		case <-time.After(next):
		}
	}
}

func (w *runningWatch) lookup(names []string) (map[string]sighting, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	got := make(map[string]sighting, len(names))
	for _, n := range names {
		if s, ok := w.seen[n]; ok {
			got[n] = s
		}
	}
	return got, len(got) == len(names)
}

// startedAt is when the runtime started the container's process.
func startedAt(ctx context.Context, cri *nart.Client, containerID string) (time.Time, error) {
	st, err := cri.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return time.Time{}, err
	}
	ns := st.GetStatus().GetStartedAt()
	if ns == 0 {
		return time.Time{}, fmt.Errorf("container %s has no StartedAt", containerID)
	}
	return time.Unix(0, ns), nil
}
