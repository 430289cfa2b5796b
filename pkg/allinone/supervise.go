package allinone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
)

// child is a process the server supervises: this host's agent, run as
// `nodeagent agent` so that its oom_score_adj (-999, as the kubelet's)
// is its own and not the control plane's.
type child struct {
	Path string
	Args []string
	// Output receives the child's stdout and stderr.
	Output io.Writer
	Logger *slog.Logger
	// Backoff is the first delay before a restart; it doubles up to
	// MaxBackoff and starts over once the child ran MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// StopTimeout is how long the child has to exit after SIGTERM
	// before it is killed.
	StopTimeout time.Duration
}

// supervise runs c until ctx ends, restarting it with back-off when it
// exits; at the end it sends SIGTERM and waits for the child (SIGKILL
// after StopTimeout). Only a child that cannot be started at all is an
// error: a crash is the back-off's business, as systemd's Restart=always.
func (c *child) supervise(ctx context.Context) error {
	delay := c.Backoff
	for {
		started := time.Now()
		err := c.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		var startErr *startError
		if errors.As(err, &startErr) {
			return err
		}
		if time.Since(started) >= c.MaxBackoff {
			delay = c.Backoff
		}
		c.Logger.Error("the agent exited; restarting it", "err", err, "after", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(2*delay, c.MaxBackoff)
	}
}

// startError is a child that could not be started.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// runOnce starts the child and waits for it, stopping it when ctx ends.
func (c *child) runOnce(ctx context.Context) error {
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Stdout, cmd.Stderr = c.Output, c.Output
	cmd.Env = childEnv(os.Environ())
	// Pdeathsig: a server killed outright (SIGKILL, a crash) still stops
	// its agent gracefully. It follows the thread that forked; the Go
	// runtime ends threads only of goroutines that exit locked to them,
	// which this one never is. Setpgid: a Ctrl-C in the terminal reaches
	// the server only, which stops the agent after it, not before.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return &startError{fmt.Errorf("start the agent %s: %w", c.Path, err)}
	}
	c.Logger.Info("started the agent", "pid", cmd.Process.Pid)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("agent (pid %d): %w", cmd.Process.Pid, exitError(err))
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return err
	case <-time.After(c.StopTimeout):
		c.Logger.Warn("the agent did not stop on SIGTERM; killing it", "pid", cmd.Process.Pid, "after", c.StopTimeout)
		_ = cmd.Process.Kill()
		return <-done
	}
}

// exitError says how a child that exited on its own ended.
func exitError(err error) error {
	if err == nil {
		return errors.New("exited with status 0")
	}
	return err
}

// childEnv is the server's environment without systemd's notification
// socket: the server, not its agent, is the unit's main process.
func childEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "NOTIFY_SOCKET=")
	})
}
