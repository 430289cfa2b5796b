package stats

import (
	"sync"
	"time"
)

// volumeCache keeps each volume's measured usage for the kubelet's
// volumeStatsAggPeriod: a directory walk per volume per period, not per
// summary, as upstream's fsResourceAnalyzer caches what its per-pod
// calculators measure. A period of 0 measures at every summary.
type volumeCache struct {
	period time.Duration

	mu      sync.Mutex
	entries map[string]duEntry // by volume directory
}

type duEntry struct {
	bytes, inodes uint64
	at            time.Time // when measured
}

func newVolumeCache(period time.Duration) *volumeCache {
	return &volumeCache{period: period, entries: map[string]duEntry{}}
}

// usage is dir's usage measured no longer than the period before now,
// measuring it when there is none; false when dir cannot be measured.
func (c *volumeCache) usage(dir string, now time.Time, measure func(string) (bytes, inodes uint64, err error)) (duEntry, error) {
	c.mu.Lock()
	e, ok := c.entries[dir]
	c.mu.Unlock()
	if ok && c.period > 0 && now.Sub(e.at) < c.period {
		return e, nil
	}
	bytes, inodes, err := measure(dir)
	if err != nil {
		c.forget(dir)
		return duEntry{}, err
	}
	e = duEntry{bytes: bytes, inodes: inodes, at: now}
	c.mu.Lock()
	c.entries[dir] = e
	c.mu.Unlock()
	return e, nil
}

func (c *volumeCache) forget(dir string) {
	c.mu.Lock()
	delete(c.entries, dir)
	c.mu.Unlock()
}

// prune drops what was not asked for in two periods: volumes of pods that
// are gone (a volume asked for is measured at least every period).
func (c *volumeCache) prune(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for dir, e := range c.entries {
		if now.Sub(e.at) >= 2*c.period {
			delete(c.entries, dir)
		}
	}
}
