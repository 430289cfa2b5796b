package agent

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// The first component error ends the agent: the others are stopped and
// have returned, their last writes done, by the time wait does, and their
// outcomes during the shutdown do not count.
func TestComponentsFirstError(t *testing.T) {
	c := newComponents(context.Background())
	var wrote atomic.Bool
	c.run("kubenet", func() error {
		<-c.ctx.Done()
		time.Sleep(10 * time.Millisecond)
		wrote.Store(true) // a last route write after cancellation
		return errors.New("interrupted")
	})
	c.helper(func() { <-c.ctx.Done() })
	c.run("service proxy", func() error { return errors.New("boom") })
	if err := c.wait(); err == nil || err.Error() != "service proxy: boom" {
		t.Errorf("wait = %v, want service proxy: boom", err)
	}
	if !wrote.Load() {
		t.Error("wait returned before every component did")
	}
}

// The end of the parent context is a clean shutdown, whatever the
// components return then.
func TestComponentsParentEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c := newComponents(ctx)
	c.run("", func() error { <-c.ctx.Done(); return c.ctx.Err() })
	c.run("API client", func() error { <-c.ctx.Done(); return errors.New("closing") })
	cancel()
	if err := c.wait(); err != nil {
		t.Errorf("wait = %v, want nil", err)
	}
}

// A component that returns without an error also ends the agent, cleanly.
func TestComponentsStoppedOnItsOwn(t *testing.T) {
	c := newComponents(context.Background())
	var stopped atomic.Bool
	c.run("healthz server", func() error { <-c.ctx.Done(); stopped.Store(true); return nil })
	c.run("read-only server", func() error { return nil })
	done := make(chan error, 1)
	go func() { done <- c.wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("wait = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a component's end did not end the others")
	}
	if !stopped.Load() {
		t.Error("the other component was not stopped")
	}
}

// A set-up error after some components started: shutdown stops and waits
// for them.
func TestComponentsShutdown(t *testing.T) {
	c := newComponents(context.Background())
	var returned atomic.Bool
	c.helper(func() { <-c.ctx.Done(); returned.Store(true) })
	c.shutdown()
	if !returned.Load() {
		t.Error("shutdown returned before the component did")
	}
}
