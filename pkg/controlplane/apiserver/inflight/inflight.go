package inflight

import (
	"net/http"
	"slices"
	"strings"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// Defaults, as kube-apiserver's --max-requests-inflight and
// --max-mutating-requests-inflight.
const (
	DefaultMaxRequestsInFlight         = 400
	DefaultMaxMutatingRequestsInFlight = 200
)

// retryAfter is upstream's fixed Retry-After, in seconds.
const retryAfter = "1"

// tooManyRequestsMessage is upstream's plain-text 429 body.
const tooManyRequestsMessage = "Too many requests, please try again later."

const systemMasters = "system:masters"

// Config sets the two limits; zero leaves that kind of request unlimited.
type Config struct {
	MaxRequestsInFlight         int
	MaxMutatingRequestsInFlight int
	// OnReject, when set, sees each request answered 429 (upstream's
	// RecordDroppedRequest: the metrics and the log of refusals).
	OnReject func(r *http.Request)
}

// Kind is how the filter counts a request.
type Kind int

const (
	// LongRunning requests are not counted.
	LongRunning Kind = iota
	// ReadOnly requests count against MaxRequestsInFlight.
	ReadOnly
	// Mutating requests count against MaxMutatingRequestsInFlight.
	Mutating
)

func (k Kind) String() string {
	return [...]string{"long-running", "read-only", "mutating"}[k]
}

// longRunningSubresources are kube-apiserver's (its LongRunningFunc:
// verbs watch and proxy, these subresources).
var longRunningSubresources = []string{"attach", "exec", "proxy", "log", "portforward"}

// Classify says how a request counts: by its verb as upstream's
// RequestInfo names it (get, list and watch are the read-only verbs; a
// non-resource request's verb is its method, so only GET is read-only
// there).
func Classify(r *http.Request) Kind {
	watch := r.URL.Query().Get("watch")
	ri, ok := request.ParseResourcePath(r.Method, r.URL.Path, watch == "true" || watch == "1")
	if !ok {
		if strings.HasPrefix(r.URL.Path, "/debug/pprof/") {
			return LongRunning
		}
		return kindOfVerb(strings.ToLower(r.Method))
	}
	if ri.Verb == "watch" || slices.Contains(longRunningSubresources, ri.Subresource) {
		return LongRunning
	}
	return kindOfVerb(ri.Verb)
}

func kindOfVerb(verb string) Kind {
	switch verb {
	case "get", "list", "watch":
		return ReadOnly
	}
	return Mutating
}

// New wraps next with the limits; with both zero it returns next.
func New(cfg Config, next http.Handler) http.Handler {
	if cfg.MaxRequestsInFlight == 0 && cfg.MaxMutatingRequestsInFlight == 0 {
		return next
	}
	l := &limiter{next: next, onReject: cfg.OnReject}
	if cfg.MaxRequestsInFlight > 0 {
		l.readOnly = make(chan struct{}, cfg.MaxRequestsInFlight)
	}
	if cfg.MaxMutatingRequestsInFlight > 0 {
		l.mutating = make(chan struct{}, cfg.MaxMutatingRequestsInFlight)
	}
	return l
}

type limiter struct {
	next               http.Handler
	onReject           func(*http.Request)
	readOnly, mutating chan struct{} // semaphores; nil: unlimited
}

func (l *limiter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var slots chan struct{}
	switch Classify(r) {
	case ReadOnly:
		slots = l.readOnly
	case Mutating:
		slots = l.mutating
	}
	if slots == nil {
		l.next.ServeHTTP(w, r)
		return
	}
	select {
	case slots <- struct{}{}:
		defer func() { <-slots }()
		l.next.ServeHTTP(w, r)
	default:
		// A system:master always gets an answer (upstream: "a super-admin
		// or a loopback connection"), without a slot.
		if u, ok := request.UserFrom(r.Context()); ok && slices.Contains(u.Groups, systemMasters) {
			l.next.ServeHTTP(w, r)
			return
		}
		if l.onReject != nil {
			l.onReject(r)
		}
		tooManyRequests(w)
	}
}

func tooManyRequests(w http.ResponseWriter) {
	w.Header().Set("Retry-After", retryAfter)
	http.Error(w, tooManyRequestsMessage, http.StatusTooManyRequests)
}
