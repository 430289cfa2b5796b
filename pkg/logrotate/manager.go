package logrotate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// Defaults (the kubelet's).
const (
	DefaultWorkers     = 1
	DefaultInterval    = 10 * time.Second
	DefaultCallTimeout = 2 * time.Minute
)

// Runtime is the part of the CRI the manager needs; *runtime.Client and
// the cri-api testing fake are ones.
type Runtime interface {
	ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error)
	ContainerStatus(ctx context.Context, id string, verbose bool) (*criv1.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, id string) error
}

// Config configures a Manager.
type Config struct {
	Runtime Runtime // required
	// MaxSize is the size in bytes at which a log is rotated (> 0).
	MaxSize int64
	// MaxFiles is the number of files kept per container log, the current
	// one included (>= 2).
	MaxFiles int
	// Workers rotate logs in parallel. Default: DefaultWorkers.
	Workers int
	// Interval is the period of the size check. Default: DefaultInterval.
	Interval time.Duration
	// CallTimeout bounds each CRI call. Default: DefaultCallTimeout.
	CallTimeout time.Duration
	// Clock drives the period. Default: the real clock.
	Clock  clock.WithTicker
	Logger *slog.Logger // default: slog.Default()
}

// Manager rotates the logs of the runtime's running containers.
type Manager struct {
	cfg Config
	log *slog.Logger
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Manager, error) {
	switch {
	case cfg.Runtime == nil:
		return nil, errors.New("log rotation: no runtime")
	case cfg.MaxSize <= 0:
		return nil, fmt.Errorf("log rotation: max size %d must be positive", cfg.MaxSize)
	case cfg.MaxFiles < 2:
		return nil, fmt.Errorf("log rotation: max files %d must be at least 2", cfg.MaxFiles)
	case cfg.Workers < 0 || cfg.Interval < 0 || cfg.CallTimeout < 0:
		return nil, errors.New("log rotation: workers, interval and call timeout must not be negative")
	}
	cfg.Workers = orDefault(cfg.Workers, DefaultWorkers)
	cfg.Interval = orDefault(cfg.Interval, DefaultInterval)
	cfg.CallTimeout = orDefault(cfg.CallTimeout, DefaultCallTimeout)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "logrotate")}, nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Run checks the logs at once and then every Interval until ctx ends; it
// returns once the workers have stopped.
func (m *Manager) Run(ctx context.Context) error {
	m.log.Info("starting container log rotation", "workers", m.cfg.Workers, "interval", m.cfg.Interval,
		"maxSize", m.cfg.MaxSize, "maxFiles", m.cfg.MaxFiles)
	// The queue holds each container once, so that a slow rotation (a big
	// file to compress) is not queued again by the next pass, and no two
	// workers handle the same container.
	q := workqueue.NewTyped[string]()
	var wg sync.WaitGroup
	for range m.cfg.Workers {
		wg.Go(func() { m.work(ctx, q) })
	}
	defer wg.Wait()
	defer q.ShutDown()

	ticker := m.cfg.Clock.NewTicker(m.cfg.Interval)
	defer ticker.Stop()
	for {
		m.enqueue(ctx, q)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// enqueue queues the running containers. A failed listing is logged and
// retried at the next period.
func (m *Manager) enqueue(ctx context.Context, q workqueue.TypedInterface[string]) {
	ids, err := m.runningContainers(ctx)
	if err != nil {
		m.log.Error("list containers for log rotation", "err", err)
		return
	}
	for _, id := range ids {
		q.Add(id)
	}
}

// runningContainers lists the containers to check. Stopped ones write no
// more, and rotating them would only leave an empty current file.
func (m *Manager) runningContainers(ctx context.Context) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
	defer cancel()
	cs, err := m.cfg.Runtime.ListContainers(ctx, &criv1.ContainerFilter{})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	var ids []string
	for _, c := range cs {
		if c.GetState() == criv1.ContainerState_CONTAINER_RUNNING {
			ids = append(ids, c.GetId())
		}
	}
	return ids, nil
}

// work handles queued containers until the queue shuts down.
func (m *Manager) work(ctx context.Context, q workqueue.TypedInterface[string]) {
	for {
		id, quit := q.Get()
		if quit {
			return
		}
		// Items left when Run stops are dropped: their CRI calls would
		// fail on the ended context anyway.
		if ctx.Err() == nil {
			m.check(ctx, id)
		}
		q.Done(id)
	}
}
