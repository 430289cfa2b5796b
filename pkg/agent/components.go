package agent

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// components is the errgroup the agent's components run in: the first
// outcome of one of them, an error or a return without one (it stopped on
// its own), ends the agent; outcomes once it is stopping no longer count.
type components struct {
	g *errgroup.Group
	// ctx is the components' context: it ends with the parent's, or on
	// the first outcome.
	ctx  context.Context
	stop context.CancelFunc
}

func newComponents(parent context.Context) *components {
	ctx, stop := context.WithCancel(parent)
	g, gctx := errgroup.WithContext(ctx)
	return &components{g: g, ctx: gctx, stop: stop}
}

// run starts a component whose outcome ends the agent, its error
// prefixed with what (if set).
func (c *components) run(what string, fn func() error) {
	c.g.Go(func() error {
		err := fn()
		switch {
		case c.ctx.Err() != nil:
			return nil
		case err == nil:
			c.stop()
			return nil
		case what != "":
			return fmt.Errorf("%s: %w", what, err)
		}
		return err
	})
}

// helper starts a goroutine the agent waits for but whose end does not
// end it (it returns once the components' context ends).
func (c *components) helper(fn func()) {
	c.g.Go(func() error { fn(); return nil })
}

// wait blocks until every component has returned, and returns the first
// one's error (nil when it stopped without one).
func (c *components) wait() error {
	err := c.g.Wait()
	c.stop()
	return err
}

// shutdown stops every component and waits for them.
func (c *components) shutdown() {
	c.stop()
	_ = c.wait()
}
