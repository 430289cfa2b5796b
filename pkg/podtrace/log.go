package podtrace

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// Defaults of Config.
const (
	DefaultMaxPods   = 512
	DefaultMaxSteps  = 256
	DefaultRetention = 10 * time.Minute
)

// Config bounds a Log; zero values take the defaults.
type Config struct {
	// MaxPods is how many pods' logs are kept: past it, the pod gone for
	// longest goes first, else the one recorded least recently.
	MaxPods int
	// MaxSteps is how many steps one pod keeps: the first ones (a start
	// trace), later ones are counted as dropped.
	MaxSteps int
	// Retention is how long a pod's log outlives the pod's worker.
	Retention time.Duration
	Now       func() time.Time
	// Sink, when set, receives every step as it is recorded (the
	// OpenTelemetry export).
	Sink Sink
}

// Sink receives steps as they are recorded; Done says the pod's start
// trace is complete (its Ready status was written, or it is gone).
type Sink interface {
	Step(pod PodRef, s Step)
	Done(pod PodRef)
}

// Log is the agent's per-pod step log, safe for concurrent use.
type Log struct {
	cfg  Config
	mu   sync.Mutex
	pods map[types.UID]*podLog
}

type podLog struct {
	ref     PodRef
	steps   []Step
	dropped int
	last    time.Time // last recorded
	gone    time.Time // zero while the pod's worker lives
	// generated is when each status summary was first generated, written
	// which summaries were recorded as written.
	generated map[string]time.Time
	written   map[string]bool
	done      bool // Sink.Done called
}

// New applies the defaults.
func New(cfg Config) *Log {
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = DefaultMaxSteps
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Log{cfg: cfg, pods: map[types.UID]*podLog{}}
}

// Now is the log's clock, for callers timing a step.
func (l *Log) Now() time.Time { return l.cfg.Now() }

// Record adds a step to the pod's log; a zero End is now.
func (l *Log) Record(pod *v1.Pod, s Step) {
	now := l.cfg.Now()
	if s.End.IsZero() {
		s.End = now
	}
	if s.Start.IsZero() {
		s.Start = s.End
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(l.podLocked(pod, now), s, now)
}

// addLocked keeps the step within the bound and hands it to the sink (in
// the lock: the sink sees a pod's steps in order, and none after Done).
func (l *Log) addLocked(p *podLog, s Step, now time.Time) {
	if p.addLocked(s, l.cfg.MaxSteps, now) && l.cfg.Sink != nil && !p.done {
		l.cfg.Sink.Step(p.ref, s)
	}
}

func (p *podLog) addLocked(s Step, maxSteps int, now time.Time) bool {
	p.last = now
	if len(p.steps) >= maxSteps {
		p.dropped++
		return false
	}
	p.steps = append(p.steps, s)
	return true
}

// podLocked is the pod's log, made (and room made for it) if missing.
func (l *Log) podLocked(pod *v1.Pod, now time.Time) *podLog {
	if p := l.pods[pod.UID]; p != nil {
		return p
	}
	l.expireLocked(now)
	for len(l.pods) >= l.cfg.MaxPods {
		l.evictLocked()
	}
	p := &podLog{
		ref:       PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		generated: map[string]time.Time{}, written: map[string]bool{},
	}
	l.pods[pod.UID] = p
	return p
}

// expireLocked drops the logs of pods gone for longer than the retention.
func (l *Log) expireLocked(now time.Time) {
	for uid, p := range l.pods {
		if !p.gone.IsZero() && now.Sub(p.gone) > l.cfg.Retention {
			delete(l.pods, uid)
		}
	}
}

// evictLocked drops one log: the pod gone longest, else the least recently
// recorded.
func (l *Log) evictLocked() {
	var victim types.UID
	var best *podLog
	for uid, p := range l.pods {
		if best == nil || older(p, best) {
			victim, best = uid, p
		}
	}
	if best != nil {
		l.finishLocked(best)
		delete(l.pods, victim)
	}
}

func older(a, b *podLog) bool {
	switch {
	case a.gone.IsZero() != b.gone.IsZero():
		return !a.gone.IsZero() // gone pods go first
	case !a.gone.IsZero():
		return a.gone.Before(b.gone)
	}
	return a.last.Before(b.last)
}

// finishLocked tells the sink once that the pod's trace is complete.
func (l *Log) finishLocked(p *podLog) {
	if !p.done && l.cfg.Sink != nil {
		p.done = true
		l.cfg.Sink.Done(p.ref)
	}
}

// PodGone starts the retention of the pod's log (its worker ended).
func (l *Log) PodGone(uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p := l.pods[uid]; p != nil {
		p.gone = l.cfg.Now()
		l.finishLocked(p)
	}
}

// StatusGenerated notes when the agent first generated a status of this
// summary (phase and readiness), where StatusWritten's step starts.
func (l *Log) StatusGenerated(pod *v1.Pod, status *v1.PodStatus) {
	now := l.cfg.Now()
	key := StatusSummary(status)
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.podLocked(pod, now)
	if _, ok := p.generated[key]; !ok {
		p.generated[key] = now
	}
}

// StatusWritten records that a status reached the API (the status
// manager's write succeeded), once per summary: the step runs from when
// the agent generated that summary to the write. A Ready pod's trace is
// complete.
func (l *Log) StatusWritten(pod *v1.Pod, status *v1.PodStatus) {
	now := l.cfg.Now()
	key := StatusSummary(status)
	l.mu.Lock()
	defer l.mu.Unlock()
	p := l.podLocked(pod, now)
	if p.written[key] {
		return
	}
	p.written[key] = true
	start, ok := p.generated[key]
	if !ok {
		start = now
	}
	l.addLocked(p, Step{Name: StepStatus, Detail: "status " + key + " in the API", Start: start, End: now}, now)
	if podReady(status) {
		l.finishLocked(p)
	}
}

// StatusSummary is what the trace tells statuses apart by: the phase and
// the Ready condition.
func StatusSummary(s *v1.PodStatus) string {
	return fmt.Sprintf("%s, Ready=%s", s.Phase, readyCondition(s))
}

func podReady(s *v1.PodStatus) bool { return readyCondition(s) == v1.ConditionTrue }

func readyCondition(s *v1.PodStatus) v1.ConditionStatus {
	if c := podutil.Condition(s, v1.PodReady); c != nil {
		return c.Status
	}
	return v1.ConditionUnknown
}

// Get returns the trace of the pod with that namespace and name: the one
// with uid when given, else the most recently recorded.
func (l *Log) Get(namespace, name string, uid types.UID) (Trace, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.expireLocked(l.cfg.Now())
	var found *podLog
	for _, p := range l.pods {
		if p.ref.Namespace != namespace || p.ref.Name != name || (uid != "" && p.ref.UID != uid) {
			continue
		}
		if found == nil || p.last.After(found.last) {
			found = p
		}
	}
	if found == nil {
		return Trace{}, false
	}
	t := Trace{PodRef: found.ref, Steps: append([]Step(nil), found.steps...), DroppedSteps: found.dropped}
	sortSteps(t.Steps)
	return t, true
}
