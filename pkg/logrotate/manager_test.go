package logrotate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNewChecksConfig(t *testing.T) {
	rt := &fakeRuntime{}
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{MaxSize: 1, MaxFiles: 2}, "no runtime"},
		{Config{Runtime: rt, MaxFiles: 2}, "max size"},
		{Config{Runtime: rt, MaxSize: 1, MaxFiles: 1}, "max files"},
		{Config{Runtime: rt, MaxSize: 1, MaxFiles: 2, Workers: -1}, "negative"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error about %q", tc.cfg, err, tc.want)
		}
	}
	m, err := New(Config{Runtime: rt, MaxSize: 1, MaxFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m.cfg.Workers != 1 || m.cfg.Interval != DefaultInterval || m.cfg.CallTimeout != DefaultCallTimeout || m.cfg.Clock == nil {
		t.Errorf("defaults not applied: %+v", m.cfg)
	}
}

func TestOnlyRunningContainersAreChecked(t *testing.T) {
	dir := t.TempDir()
	m, _, _ := setup(t, 5,
		container(dir, "run", running),
		container(dir, "exited", criv1.ContainerState_CONTAINER_EXITED),
		container(dir, "created", criv1.ContainerState_CONTAINER_CREATED),
	)
	ids, err := m.runningContainers(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"run"}) {
		t.Errorf("checked %q, want only the running container", ids)
	}
}

// TestRunRotatesEveryPeriodUntilCancelled drives Run with the fake clock:
// a pass at start, one per tick, several workers, and a clean stop.
func TestRunRotatesEveryPeriodUntilCancelled(t *testing.T) {
	dir := t.TempDir()
	exited := container(dir, "exited", criv1.ContainerState_CONTAINER_EXITED)
	cs := []string{"c1", "c2", "c3"}
	m, rt, clk := setup(t, 5,
		container(dir, "c1", running), container(dir, "c2", running), container(dir, "c3", running), exited)
	m.cfg.Workers = 3
	rt.listed, rt.reopened = make(chan struct{}, 8), make(chan string, 8)
	for _, id := range cs {
		write(t, logOf(dir, id), "0123456789")
	}
	write(t, exited.LogPath, "0123456789")

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()

	for pass := range 2 {
		recv(t, rt.listed, fmt.Sprintf("pass %d", pass))
		var got []string
		for range cs {
			got = append(got, recv(t, rt.reopened, fmt.Sprintf("rotation in pass %d", pass)))
		}
		slices.Sort(got)
		if !slices.Equal(got, cs) {
			t.Fatalf("pass %d rotated %q, want %q", pass, got, cs)
		}
		if pass == 0 {
			for _, id := range cs {
				write(t, logOf(dir, id), "0123456789")
			}
			clk.Step(m.cfg.Interval)
		}
	}
	cancel()
	if err := recv(t, done, "Run to return"); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Run: %v", err)
	}
	if got := names(t, dir+"/exited"); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("exited container's files %q, want its log untouched", got)
	}
	if got := names(t, dir+"/c1"); len(got) != 3 {
		t.Errorf("c1's files %q, want the log and two rotations", got)
	}
}

func TestRunSurvivesListFailure(t *testing.T) {
	dir := t.TempDir()
	m, rt, clk := setup(t, 5, container(dir, "c1", running))
	rt.listed, rt.reopened = make(chan struct{}, 8), make(chan string, 8)
	write(t, logOf(dir, "c1"), "0123456789")
	rt.InjectError("ListContainers", errors.New("runtime down"))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	recv(t, rt.listed, "the failed listing")
	clk.Step(m.cfg.Interval)
	recv(t, rt.listed, "the next listing")
	if id := recv(t, rt.reopened, "the rotation"); id != "c1" {
		t.Errorf("rotated %s", id)
	}
	cancel()
	recv(t, done, "Run to return")
}

func logOf(dir, id string) string { return dir + "/" + id + "/0.log" }
