package file

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// DefaultResyncPeriod is the kubelet's default fileCheckFrequency.
const DefaultResyncPeriod = 20 * time.Second

const (
	// debounceDelay is how long the source waits after the last event of a
	// burst; maxDebounce caps the wait from the first event of a burst. A
	// write burst (editor, cp) lands within a few milliseconds; the delay
	// is kept short because it adds to every pod's start.
	debounceDelay = 10 * time.Millisecond
	maxDebounce   = 200 * time.Millisecond
	// dirPollInterval is how often a missing directory is looked for.
	dirPollInterval = time.Second
)

// Config configures a Source.
type Config struct {
	// Dir is the manifest directory (the kubelet's staticPodPath).
	Dir string
	// NodeName is appended to pod names and set as spec.nodeName; it must be
	// a lowercase DNS subdomain (the kubelet lowercases hostnames).
	NodeName string
	// ResyncPeriod is the period of full re-reads; 0 means 20s.
	ResyncPeriod time.Duration
	// Logger receives the source's logs; nil means slog.Default().
	Logger *slog.Logger
}

// Source reads static pod manifests from a directory. Create it with New and
// start it with Run; Errors may be called concurrently with Run.
type Source struct {
	dir      string
	nodeName string
	resync   time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	files   map[string]*fileState
	nextSeq int
	dirErr  string
	dupErrs map[string]string
	seen    map[types.UID]time.Time
	lastSig string
}

// fileState is what the source remembers about one manifest file.
type fileState struct {
	seq    int       // order in which the file was first seen
	digest [32]byte  // sha256 of the bytes last parsed
	parsed bool      // digest is valid
	pods   []*v1.Pod // pods of the last successful parse
	err    string    // last error; "" when the last read was good
}

// New checks cfg and returns a Source.
func New(cfg Config) (*Source, error) {
	if cfg.Dir == "" {
		return nil, errors.New("staticpod: Dir is required")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("staticpod: NodeName is required")
	}
	if msgs := validation.IsDNS1123Subdomain(cfg.NodeName); len(msgs) > 0 {
		return nil, fmt.Errorf("staticpod: invalid NodeName %q: %s", cfg.NodeName, strings.Join(msgs, "; "))
	}
	if cfg.ResyncPeriod < 0 {
		return nil, fmt.Errorf("staticpod: ResyncPeriod must not be negative, got %v", cfg.ResyncPeriod)
	}
	if cfg.ResyncPeriod == 0 {
		cfg.ResyncPeriod = DefaultResyncPeriod
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("staticpod: %w", err)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	return &Source{
		dir:      dir,
		nodeName: cfg.NodeName,
		resync:   cfg.ResyncPeriod,
		log:      logger.With("component", "staticpod", "dir", dir),
		files:    map[string]*fileState{},
		dupErrs:  map[string]string{},
		seen:     map[types.UID]time.Time{},
		lastSig:  "\x00never", // the first rescan always reports a change
	}, nil
}

// Dir returns the absolute manifest directory.
func (s *Source) Dir() string { return s.dir }

// Errors returns the last error of every manifest file that currently has
// one (parse, validation, read or duplicate-name errors), keyed by absolute
// file path. A directory-level error is keyed by the directory path.
func (s *Source) Errors() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := maps.Clone(s.dupErrs)
	for path, st := range s.files {
		if st.err == "" {
			continue
		}
		if d, ok := out[path]; ok {
			out[path] = st.err + "; " + d
		} else {
			out[path] = st.err
		}
	}
	if s.dirErr != "" {
		out[s.dir] = s.dirErr
	}
	return out
}

// Run watches the directory until ctx is done. It sends the full, sorted set
// of static pods on out once at start and again whenever the set changes.
// Pods sent are copies owned by the receiver. Run must be called only once;
// it returns nil when ctx is done and an error only if no file watcher can
// be created.
func (s *Source) Run(ctx context.Context, out chan<- []*v1.Pod) error {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("staticpod: create file watcher: %w", err)
	}
	defer w.Close()
	l := &loop{s: s, w: w, out: out}
	return l.run(ctx)
}
