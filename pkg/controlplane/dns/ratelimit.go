package dns

import (
	"net/netip"
	"sync"
	"time"
)

// Rate limit defaults.
const (
	// DefaultRateLimit is the UDP responses per second a client gets
	// before it is sent truncated answers (and so moves to TCP).
	DefaultRateLimit = 200
	// maxRateClients bounds the clients tracked; when all are busy, new
	// ones share one bucket, so that a flood from spoofed sources takes
	// bounded memory and still gets limited.
	maxRateClients = 10000
	// sweepInterval bounds how often a full table is swept of clients
	// whose buckets have refilled (idle ones).
	sweepInterval = time.Second
)

// limiter is a token bucket per client address: rate tokens a second, at
// most rate of them saved up (a second's worth of burst).
type limiter struct {
	rate, burst float64
	max         int
	now         func() time.Time

	mu        sync.Mutex
	clients   map[netip.Addr]*bucket
	shared    bucket // for the clients the table has no room for
	lastSweep time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

// newLimiter limits each client to rate responses a second; rate 0 or
// less returns nil, which allows everything.
func newLimiter(rate int, max int, now func() time.Time) *limiter {
	if rate <= 0 {
		return nil
	}
	return &limiter{rate: float64(rate), burst: float64(rate), max: max, now: now,
		clients: make(map[netip.Addr]*bucket)}
}

// allow takes a token from ip's bucket, reporting whether there was one.
func (l *limiter) allow(ip netip.Addr) bool {
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b, ok := l.clients[ip]
	if !ok {
		b = l.track(ip, now)
	}
	b.refill(now, l.rate, l.burst)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// track adds a full bucket for ip, or returns the shared one when the
// table stays full after sweeping the idle clients.
func (l *limiter) track(ip netip.Addr, now time.Time) *bucket {
	if len(l.clients) >= l.max && now.Sub(l.lastSweep) >= sweepInterval {
		l.lastSweep = now
		for k, b := range l.clients {
			if b.full(now, l.rate, l.burst) {
				delete(l.clients, k)
			}
		}
	}
	if len(l.clients) >= l.max {
		if l.shared.last.IsZero() {
			l.shared = bucket{tokens: l.burst, last: now}
		}
		return &l.shared
	}
	b := &bucket{tokens: l.burst, last: now}
	l.clients[ip] = b
	return b
}

func (b *bucket) refill(now time.Time, rate, burst float64) {
	if d := now.Sub(b.last); d > 0 {
		b.tokens = min(burst, b.tokens+d.Seconds()*rate)
		b.last = now
	}
}

// full reports whether the bucket would be full at now: its client has
// been idle long enough to be forgotten without losing anything.
func (b *bucket) full(now time.Time, rate, burst float64) bool {
	return b.tokens+now.Sub(b.last).Seconds()*rate >= burst
}
