package stats

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// statsTimeout bounds one summary's CRI calls together; each call also
// has the runtime client's own timeout.
const statsTimeout = 30 * time.Second

// Config holds what the provider reads; Runtime and NodeName are
// required.
type Config struct {
	NodeName string
	Runtime  runtime.Stats
	// ImageFs, when set, gives the runtime's image filesystem.
	ImageFs runtime.ImageFs
	// RootDir is the agent's root directory: its filesystem is the node's.
	RootDir string
	// PodLogsDir is the kubelet's /var/log/pods: containers' log usage
	// and the pods' ephemeral storage count what is under it.
	PodLogsDir string
	// PodCgroups, when set, is the cgroup the pod cgroups are in (the
	// kubepods cgroup, "/kubepods" below the cgroupfs mount): pods' CPU and
	// memory are then read from their cgroups, as the kubelet reads them
	// through cAdvisor, and the runtime is asked for sandbox stats only
	// for the full summary's pod network.
	PodCgroups string
	// VolumeStatsAggPeriod is how long a volume's measured usage is
	// reused (the kubelet's volumeStatsAggPeriod); 0 measures at every
	// summary. NoVolumeStats (volumeStatsAggPeriod 0 in the kubelet's
	// configuration) reports none.
	VolumeStatsAggPeriod time.Duration
	NoVolumeStats        bool
	// Host is where the node's own usage is read (default /proc and
	// /sys/fs/cgroup).
	Host   Host
	Logger *slog.Logger
}

// Provider computes the summary API and the resource metrics from the
// CRI (pods and containers) and the host (the node). Safe for concurrent
// use.
type Provider struct {
	cfg  Config
	log  *slog.Logger
	now  func() time.Time
	rate *rates
	// volumes are the volumes' measured usage, reused for the period.
	volumes *volumeCache

	mu sync.Mutex
	// noSandboxStatsUntil: the runtime said it has no
	// ListPodSandboxStats; pods sum their containers until then.
	noSandboxStatsUntil time.Time
}

// New checks cfg.
func New(cfg Config) (*Provider, error) {
	if cfg.NodeName == "" || cfg.Runtime == nil {
		return nil, errors.New("stats: NodeName and Runtime are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Host = cfg.Host.withDefaults()
	return &Provider{cfg: cfg, log: cfg.Logger.With("component", "stats"), now: time.Now, rate: newRates(),
		volumes: newVolumeCache(cfg.VolumeStatsAggPeriod)}, nil
}

// Summary is the full summary: node, pods and containers with CPU,
// memory, filesystems and network where known.
func (p *Provider) Summary(ctx context.Context) (*Summary, error) {
	return p.summary(ctx, false)
}

// CPUAndMemory is the summary restricted to CPU and memory (the
// summary's only_cpu_and_memory, and the resource metrics' source).
func (p *Provider) CPUAndMemory(ctx context.Context) (*Summary, error) {
	return p.summary(ctx, true)
}

func (p *Provider) summary(ctx context.Context, cpuAndMemoryOnly bool) (*Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	pods, err := p.podStats(ctx, !cpuAndMemoryOnly)
	if err != nil {
		return nil, fmt.Errorf("pod stats: %w", err)
	}
	if !cpuAndMemoryOnly {
		p.volumes.prune(p.now())
	}
	node := p.nodeStats(ctx, !cpuAndMemoryOnly)
	return &Summary{Node: node, Pods: pods}, nil
}

// rates turns cumulative CPU counters into nanocores, from the previous
// sample of the same object; the runtime's own rate wins when it has one.
type rates struct {
	mu   sync.Mutex
	last map[string]cpuSample
}

type cpuSample struct {
	at    time.Time
	usage uint64 // core-nanoseconds
}

func newRates() *rates { return &rates{last: map[string]cpuSample{}} }

// nanoCores records a sample and returns the rate since the previous one
// (nil for the first sample or a counter that went backwards).
func (r *rates) nanoCores(key string, at time.Time, usage uint64) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	prev, ok := r.last[key]
	r.last[key] = cpuSample{at, usage}
	if !ok || !at.After(prev.at) || usage < prev.usage {
		return nil
	}
	v := uint64(float64(usage-prev.usage) / at.Sub(prev.at).Seconds())
	return &v
}

// keep drops the samples of objects that are gone.
func (r *rates) keep(keys map[string]bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.last {
		if !keys[k] {
			delete(r.last, k)
		}
	}
}
