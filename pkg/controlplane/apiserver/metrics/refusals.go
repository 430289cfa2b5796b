package metrics

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// Refusals are logged at most refusalBurst a second: a client hammering
// the server with refused requests must not flood the log (nor slow the
// server with it); the lines left out are counted in the next one.
const refusalBurst = 10

// refusedCodes are the answers an operator sees in the default log:
// authorization refusals, bodies over the limit and the in-flight
// limit's 429. Panics (500) are logged at error by pkg/crash.
var refusedCodes = map[int]slog.Level{
	http.StatusForbidden:             slog.LevelInfo,
	http.StatusRequestEntityTooLarge: slog.LevelWarn,
	http.StatusTooManyRequests:       slog.LevelWarn,
}

// refusalLog logs refused requests with their user, verb and path,
// rate-limited.
type refusalLog struct {
	log *slog.Logger
	now func() time.Time

	mu          sync.Mutex
	windowStart time.Time
	inWindow    int
	suppressed  int
}

// LogRefusals makes the requests Instrument and Dropped see refused
// (403, 413, 429) logged to log.
func (m *Requests) LogRefusals(log *slog.Logger) {
	m.refusals = &refusalLog{log: log, now: time.Now}
}

// record logs r if code is a refusal and the rate allows.
func (l *refusalLog) record(r *http.Request, verb string, code int) {
	level, refused := refusedCodes[code]
	if l == nil || !refused {
		return
	}
	suppressed, ok := l.admit()
	if !ok {
		return
	}
	attrs := []any{"code", code, "verb", verb, "path", r.URL.Path}
	if u, ok := request.UserFrom(r.Context()); ok {
		attrs = append(attrs, "user", u.Name, "groups", u.Groups)
	}
	if suppressed > 0 {
		attrs = append(attrs, "refusalsNotLogged", suppressed)
	}
	l.log.Log(r.Context(), level, "request refused", attrs...)
}

// admit says whether one more line fits in this second and how many
// were left out since the last line.
func (l *refusalLog) admit() (suppressed int, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := l.now(); now.Sub(l.windowStart) >= time.Second {
		l.windowStart, l.inWindow = now, 0
	}
	if l.inWindow >= refusalBurst {
		l.suppressed++
		return 0, false
	}
	l.inWindow++
	suppressed, l.suppressed = l.suppressed, 0
	return suppressed, true
}
