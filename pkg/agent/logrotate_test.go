package agent

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// TestLogRotationStartsFromConfigAndStops checks the wiring: the defaulted
// config is accepted, and Run returns once ctx ends even though the
// runtime never answers (no socket behind the client).
func TestLogRotationStartsFromConfigAndStops(t *testing.T) {
	cfg := agentconfig.Default()
	rt, err := runtime.Dial(context.Background(), "unix://"+filepath.Join(t.TempDir(), "none.sock"), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx, cancel := context.WithCancel(context.Background())
	m, err := newLogRotation(cfg, rt, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(30 * time.Second): // guards a hang only
		t.Fatal("log rotation did not stop")
	}

	cfg.ContainerLogMaxSize = "lots" // what validation rejects, New rejects too
	if _, err := newLogRotation(cfg, rt, slog.Default()); err == nil {
		t.Error("a config without a usable max size was accepted")
	}
}
