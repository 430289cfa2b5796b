package agent

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A joined component has returned, its last write done, by the time
// Wait does, and its outcome reaches errc.
func TestGoJoined(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	var wrote atomic.Bool
	goJoined(&wg, errc, "kubenet", func() error {
		<-ctx.Done()
		wrote.Store(true) // a last route write after cancellation
		return errors.New("boom")
	})
	cancel()
	wg.Wait()
	if !wrote.Load() {
		t.Error("Wait returned before the component did")
	}
	if err := <-errc; err == nil || err.Error() != "kubenet: boom" {
		t.Errorf("outcome = %v, want kubenet: boom", err)
	}
}

// No reader left (runComponents returned on the first outcome) and errc
// full: Wait still returns.
func TestGoJoinedFullErrc(t *testing.T) {
	var wg sync.WaitGroup
	errc := make(chan error, 1)
	errc <- errors.New("first")
	goJoined(&wg, errc, "service proxy", func() error { return errors.New("second") })
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Wait hangs on a full errc")
	}
	if err := <-errc; err.Error() != "first" {
		t.Errorf("errc = %v; want the first outcome kept", err)
	}
}
