package userns

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// MappingsFile is the kubelet's name for the record in the pod directory.
const MappingsFile = "userns"

// Config says where pod directories live and which IDs pods may have.
type Config struct {
	// PodsDir holds one directory per pod UID (<root>/pods).
	PodsDir string
	// IDsPerPod is userNamespaces.idsPerPod (0: DefaultIDsPerPod).
	IDsPerPod uint32
	// FirstID and Length are the node's range (KubeletMappings).
	FirstID, Length uint32
	// MaxPods is maxPods: the range must hold a block for each.
	MaxPods int
	Logger  *slog.Logger
	// Rand picks where the search for a free block starts (nil: random,
	// as the kubelet's allocation bitmap); tests make it deterministic.
	Rand func(n int) int
}

// Manager hands out one block of IDs per pod and remembers which.
type Manager struct {
	cfg    Config
	log    *slog.Logger
	off    int // the range's first block, in blocks of IDsPerPod
	mu     sync.Mutex
	used   []bool               // block index (from off) in use
	usedBy map[types.UID]uint32 // pod -> its block's first host ID
}

// New checks the range as the kubelet's MakeUserNsManager does (its
// errors) and reads back the blocks recorded in existing pod directories;
// a record it cannot read stops it, as it stops the kubelet.
func New(cfg Config) (*Manager, error) {
	if cfg.IDsPerPod == 0 {
		cfg.IDsPerPod = DefaultIDsPerPod
	}
	if err := checkRange(cfg); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.IntN
	}
	m := &Manager{
		cfg: cfg, log: cfg.Logger,
		off:    int(cfg.FirstID / cfg.IDsPerPod),
		used:   make([]bool, cfg.Length/cfg.IDsPerPod),
		usedBy: map[types.UID]uint32{},
	}
	pods, err := m.podsOnDisk()
	if err != nil {
		return nil, fmt.Errorf("read pods from disk: %w", err)
	}
	for _, uid := range pods {
		if err := m.recordFromDisk(uid); err != nil {
			return nil, fmt.Errorf("record pod mappings for existing pod %q: %w", uid, err)
		}
	}
	return m, nil
}

func checkRange(cfg Config) error {
	n := cfg.IDsPerPod
	switch {
	case n%DefaultIDsPerPod != 0:
		return fmt.Errorf("kubelet user namespace length %v is not a multiple of %d", n, DefaultIDsPerPod)
	case cfg.FirstID%n != 0:
		return fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", cfg.FirstID, n)
	case cfg.FirstID < n:
		// ID 0 of the host must never be mapped.
		return fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", cfg.FirstID, n)
	case cfg.Length%n != 0:
		return fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", cfg.Length, n)
	case cfg.Length/n < uint32(cfg.MaxPods):
		return fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", cfg.MaxPods)
	}
	return nil
}

// GetOrCreate returns the pod's user namespace for the CRI (mode POD, its
// block mapped from ID 0 for UIDs and GIDs): the recorded one if the pod
// directory has it, else a free block, recorded before it is returned.
func (m *Manager) GetOrCreate(uid types.UID) (*criv1.UserNamespace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	content, err := os.ReadFile(m.file(uid))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	var rec record
	if len(content) > 0 {
		if rec, err = m.parseAndRecord(uid, content); err != nil {
			return nil, fmt.Errorf("user namespace: %w", err)
		}
	} else if rec, err = m.create(uid); err != nil {
		return nil, fmt.Errorf("create user namespace: %w", err)
	}
	return rec.cri(), nil
}

// Release frees the pod's block and removes its record.
func (m *Manager) Release(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(uid)
}

// CleanupOrphans frees the blocks of pods not in keep (the kubelet's
// CleanupOrphanedPodUsernsAllocations): those with a directory on disk,
// and those recorded whose directory is gone.
func (m *Manager) CleanupOrphans(keep map[types.UID]bool) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	pods, err := m.podsOnDisk()
	if err != nil {
		return fmt.Errorf("user namespace: read pods from disk: %w", err)
	}
	onDisk := make(map[types.UID]bool, len(pods))
	for _, uid := range pods {
		onDisk[uid] = true
		if !keep[uid] {
			m.releaseLocked(uid)
		}
	}
	for uid := range m.usedBy {
		if !onDisk[uid] {
			m.releaseLocked(uid)
		}
	}
	return nil
}

func (m *Manager) releaseLocked(uid types.UID) {
	from, ok := m.usedBy[uid]
	if !ok {
		return
	}
	delete(m.usedBy, uid)
	m.log.Debug("releasing pod user namespace allocation", "podUID", uid)
	_ = os.Remove(m.file(uid))
	m.used[m.index(from)] = false
}

func (m *Manager) create(uid types.UID) (record, error) {
	i, ok := m.freeBlock()
	if !ok {
		return record{}, errors.New("could not find an empty slot to allocate a user namespace")
	}
	first := uint32(i+m.off) * m.cfg.IDsPerPod
	m.used[i], m.usedBy[uid] = true, first
	mapping := idMapping{HostID: first, ContainerID: 0, Length: m.cfg.IDsPerPod}
	rec := record{UIDMappings: []idMapping{mapping}, GIDMappings: []idMapping{mapping}}
	if err := m.write(uid, rec); err != nil {
		m.releaseLocked(uid)
		return record{}, err
	}
	m.log.Debug("new pod user namespace allocation", "podUID", uid)
	return rec, nil
}

// freeBlock scans for a free block from a random one, wrapping around.
func (m *Manager) freeBlock() (int, bool) {
	n := len(m.used)
	if n == 0 {
		return 0, false
	}
	start := m.cfg.Rand(n)
	for k := range n {
		if i := (start + k) % n; !m.used[i] {
			return i, true
		}
	}
	return 0, false
}

func (m *Manager) recordFromDisk(uid types.UID) error {
	content, err := os.ReadFile(m.file(uid))
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(content) == 0) {
		return nil // the pod has no user namespace
	}
	if err != nil {
		return err
	}
	_, err = m.parseAndRecord(uid, content)
	return err
}

// parseAndRecord checks a record as the kubelet does (only what it
// writes is accepted) and marks its block used by the pod.
func (m *Manager) parseAndRecord(uid types.UID, content []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(content, &rec); err != nil {
		return record{}, fmt.Errorf("invalid user namespace mappings file: %w", err)
	}
	if err := rec.check(); err != nil {
		return record{}, err
	}
	return rec, m.mark(uid, rec.UIDMappings[0].HostID, rec.UIDMappings[0].Length)
}

func (m *Manager) mark(uid types.UID, from, length uint32) error {
	if length != m.cfg.IDsPerPod {
		return fmt.Errorf("wrong user namespace length %v", length)
	}
	if from%m.cfg.IDsPerPod != 0 {
		return fmt.Errorf("wrong user namespace offset specified %v", from)
	}
	prev, found := m.usedBy[uid]
	if found && prev != from {
		return fmt.Errorf("different user namespace range already used by pod %q", uid)
	}
	i := m.index(from)
	if i < 0 || i >= len(m.used) {
		return fmt.Errorf("id %v is out of range", from)
	}
	if found {
		return nil
	}
	if m.used[i] {
		return fmt.Errorf("range picked for pod %q already taken", uid)
	}
	m.used[i], m.usedBy[uid] = true, from
	return nil
}

func (m *Manager) index(from uint32) int { return int(from/m.cfg.IDsPerPod) - m.off }

func (m *Manager) file(uid types.UID) string {
	return filepath.Join(m.cfg.PodsDir, string(uid), MappingsFile)
}

func (m *Manager) podsOnDisk() ([]types.UID, error) {
	entries, err := os.ReadDir(m.cfg.PodsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []types.UID
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, types.UID(e.Name()))
		}
	}
	return out, nil
}
