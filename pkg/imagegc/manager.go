package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/stats"
)

// Period is the kubelet's ImageGCPeriod, a constant upstream: the
// default of Config.Period, which only tests shorten.
const Period = 5 * time.Minute

// callTimeout bounds one collection's CRI calls together (each call also
// has the runtime client's own timeout).
const callTimeout = 2 * time.Minute

// The kubelet's event reasons (pkg/kubelet/events).
const (
	EventImageGCFailed       = "ImageGCFailed"
	EventFreeDiskSpaceFailed = "FreeDiskSpaceFailed"
	EventInvalidDiskCapacity = "InvalidDiskCapacity"
	messageInvalidCapacity   = "invalid capacity 0 on image filesystem"
)

// Containers lists the runtime's containers, running or not.
type Containers interface {
	ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error)
}

// FsStats reads the image filesystem (pkg/stats' Provider).
type FsStats interface {
	ImageFsStats(ctx context.Context) (*stats.FsStats, error)
}

// Metrics counts the removed images by reason.
type Metrics interface {
	ImageGarbageCollected(reason string)
}

// Config configures a Manager; Images, Containers and NodeName are
// required.
type Config struct {
	Policy     Policy
	Images     runtime.ImageStore
	Containers Containers
	FsStats    FsStats // nil: no collection for space
	// SandboxImage is never removed (the runtime's sandbox_image, which
	// containerd 1.6 does not report pinned).
	SandboxImage string
	Recorder     record.EventRecorder // nil: no events
	Metrics      Metrics              // nil: not counted
	NodeName     string
	// Period is how often Run collects (0: Period, the kubelet's).
	Period time.Duration
	Logger *slog.Logger
	Now    func() time.Time
}

// Manager is the kubelet's image GC manager. Safe for concurrent use.
type Manager struct {
	cfg     Config
	log     *slog.Logger
	nodeRef *v1.ObjectReference
	began   time.Time

	mu      sync.Mutex // one collection at a time; guards records
	records map[string]*imageRecord
}

type imageRecord struct {
	firstDetected, lastUsed time.Time
}

// New checks cfg as the kubelet's NewImageGCManager does.
func New(cfg Config) (*Manager, error) {
	p := cfg.Policy
	switch {
	case cfg.Images == nil || cfg.Containers == nil || cfg.NodeName == "":
		return nil, errors.New("imagegc: Images, Containers and NodeName are required")
	case p.HighThresholdPercent < 0 || p.HighThresholdPercent > 100:
		return nil, fmt.Errorf("invalid HighThresholdPercent %d, must be in range [0-100]", p.HighThresholdPercent)
	case p.LowThresholdPercent < 0 || p.LowThresholdPercent > 100:
		return nil, fmt.Errorf("invalid LowThresholdPercent %d, must be in range [0-100]", p.LowThresholdPercent)
	case p.LowThresholdPercent > p.HighThresholdPercent:
		return nil, fmt.Errorf("LowThresholdPercent %d can not be higher than HighThresholdPercent %d", p.LowThresholdPercent, p.HighThresholdPercent)
	case cfg.Period < 0:
		return nil, fmt.Errorf("imagegc: Period must not be negative, got %s", cfg.Period)
	}
	if cfg.Period == 0 {
		cfg.Period = Period
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	// The kubelet's nodeRef: the node's name as its UID.
	ref := &v1.ObjectReference{Kind: "Node", Name: cfg.NodeName, UID: types.UID(cfg.NodeName)}
	return &Manager{cfg: cfg, log: cfg.Logger.With("component", "imagegc"), nodeRef: ref, began: cfg.Now(), records: map[string]*imageRecord{}}, nil
}

// Disabled says whether the kubelet would not collect at all: a high
// threshold of 100 and no maximum age.
func (p Policy) Disabled() bool { return p.HighThresholdPercent == 100 && p.MaxAge == 0 }

// Run collects now and then every cfg.Period until ctx ends. As the
// kubelet, a failure is an ImageGCFailed event only when the previous
// collection failed too (the first may come before the stats are ready).
func (m *Manager) Run(ctx context.Context) {
	if m.cfg.Policy.Disabled() {
		m.log.Info("imageGCHighThresholdPercent is 100 and imageMaximumGCAge is 0: image garbage collection is off")
		return
	}
	t := time.NewTicker(m.cfg.Period)
	defer t.Stop()
	failed := false
	for {
		err := m.GarbageCollect(ctx)
		switch {
		case err != nil && failed:
			m.log.Error("image garbage collection failed multiple times in a row", "err", err)
			m.event(v1.EventTypeWarning, EventImageGCFailed, err.Error())
		case err != nil:
			m.log.Error("image garbage collection failed once; stats initialization may not have completed yet", "err", err)
		}
		failed = err != nil
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// GarbageCollect runs one collection: removes the images the plan names,
// then reports a space it could not free (FreeDiskSpaceFailed).
func (m *Manager) GarbageCollect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	images, err := m.detect(ctx, now)
	if err != nil {
		return err
	}
	usage, usageErr := m.usage(ctx)
	plan := ComputePlan(images, usage, now, m.began, m.cfg.Policy)
	m.log.Debug("image garbage collection plan", "plan", plan.String())
	if _, err := m.remove(ctx, plan.Age, math.MaxInt64); err != nil {
		return fmt.Errorf("wanted to free images older than %v, encountered errors in image deletion: %w", m.cfg.Policy.MaxAge, err)
	}
	switch {
	case usageErr != nil:
		return usageErr
	case plan.InvalidCapacity:
		m.event(v1.EventTypeWarning, EventInvalidDiskCapacity, messageInvalidCapacity)
		return errors.New(messageInvalidCapacity)
	case plan.AmountToFree <= 0:
		return nil
	}
	m.log.Info("disk usage on image filesystem is over the high threshold, trying to free bytes down to the low threshold",
		"usage", plan.UsagePercent, "highThreshold", m.cfg.Policy.HighThresholdPercent,
		"amountToFree", plan.AmountToFree, "lowThreshold", m.cfg.Policy.LowThresholdPercent)
	freed, err := m.remove(ctx, slices.Concat(plan.Space, plan.Spare), plan.AmountToFree)
	if err != nil {
		return fmt.Errorf("wanted to free %d bytes, but freed %d bytes space with errors in image deletion: %w", plan.AmountToFree, freed, err)
	}
	if freed < plan.AmountToFree {
		msg := ShortfallMessage(plan.UsagePercent, plan.CapacityBytes, freed)
		m.event(v1.EventTypeWarning, EventFreeDiskSpaceFailed, msg)
		return errors.New(msg)
	}
	return nil
}

// DeleteUnusedImages removes every unused image older than the minimum
// age (for the eviction manager) and says how many bytes that freed.
func (m *Manager) DeleteUnusedImages(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.cfg.Now()
	images, err := m.detect(ctx, now)
	if err != nil {
		return 0, err
	}
	m.log.Info("attempting to delete unused images")
	freed, err := m.remove(ctx, UnusedPlan(images, now, m.cfg.Policy), math.MaxInt64)
	if err != nil {
		return freed, fmt.Errorf("freed %d bytes space with errors in image deletion: %w", freed, err)
	}
	return freed, nil
}

// ShortfallMessage is upstream's FreeDiskSpaceFailed message.
func ShortfallMessage(usagePercent int, capacity, freed int64) string {
	return fmt.Sprintf("Insufficient free disk space on the node's image filesystem (%d%% of %s used). "+
		"Failed to free sufficient space by deleting unused images (freed %d bytes). "+
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data.",
		usagePercent, formatSize(capacity), freed)
}

// formatSize writes a byte count as upstream's formatSize: bytes below a
// KiB, else KiB, MiB, GiB or TiB (the largest unit, however many) with one
// decimal.
func formatSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for q := n / unit; q >= unit && exp < 3; q /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGT"[exp])
}

// remove removes the images in order until enough bytes are freed, going
// on past errors, and returns the bytes freed and the errors joined.
func (m *Manager) remove(ctx context.Context, rs []Removal, enough int64) (int64, error) {
	var freed int64
	var errs []error
	for _, r := range rs {
		if freed >= enough {
			break
		}
		m.log.Info("removing image to free bytes", "imageID", r.ID, "size", r.Size, "reason", r.Reason)
		if err := m.cfg.Images.RemoveImage(ctx, &criv1.ImageSpec{Image: r.ID}); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.records, r.ID)
		freed += r.Size
		if m.cfg.Metrics != nil {
			m.cfg.Metrics.ImageGarbageCollected(r.Reason)
		}
	}
	return freed, errors.Join(errs...)
}

func (m *Manager) usage(ctx context.Context) (*Usage, error) {
	if m.cfg.FsStats == nil {
		return nil, nil
	}
	fs, err := m.cfg.FsStats.ImageFsStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("image filesystem stats: %w", err)
	}
	var u Usage
	if fs.CapacityBytes != nil {
		u.CapacityBytes = int64(*fs.CapacityBytes)
	}
	if fs.AvailableBytes != nil {
		u.AvailableBytes = int64(*fs.AvailableBytes)
	}
	return &u, nil
}

func (m *Manager) event(eventType, reason, msg string) {
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Event(m.nodeRef, eventType, reason, msg)
	}
}

// SandboxImage reads the runtime's sandbox image from its verbose status
// (containerd's CRI config, "sandboxImage"); "" when it says none.
func SandboxImage(ctx context.Context, rt interface {
	Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error)
}) (string, error) {
	st, err := rt.Status(ctx, true)
	if err != nil {
		return "", err
	}
	raw, ok := st.GetInfo()["config"]
	if !ok {
		return "", nil
	}
	var c struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if err := json.Unmarshal([]byte(raw), &c); err != nil {
		return "", fmt.Errorf("runtime status config: %w", err)
	}
	return c.SandboxImage, nil
}
