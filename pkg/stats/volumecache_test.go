package stats

import (
	"errors"
	"os"
	"testing"
	"time"
)

// A volume is measured once per period; its figures and time are the
// measurement's; a failed measurement is not kept; unasked volumes go.
func TestVolumeCache(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	walks := 0
	size := uint64(100)
	var fail error
	measure := func(string) (uint64, uint64, error) {
		walks++
		return size, 1, fail
	}
	c := newVolumeCache(time.Minute)
	if e, err := c.usage("/v", t0, measure); err != nil || e.bytes != 100 || !e.at.Equal(t0) || walks != 1 {
		t.Fatalf("first: %+v %v, %d walks", e, err, walks)
	}
	size = 200
	if e, _ := c.usage("/v", t0.Add(59*time.Second), measure); e.bytes != 100 || !e.at.Equal(t0) || walks != 1 {
		t.Errorf("within the period: %+v, %d walks; want the first measurement", e, walks)
	}
	if e, _ := c.usage("/v", t0.Add(time.Minute), measure); e.bytes != 200 || walks != 2 {
		t.Errorf("after the period: %+v, %d walks", e, walks)
	}
	fail = os.ErrNotExist
	if _, err := c.usage("/gone", t0, measure); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v", err)
	}
	if _, ok := c.entries["/gone"]; ok {
		t.Error("a failed measurement was kept")
	}
	c.prune(t0.Add(3 * time.Minute))
	if len(c.entries) != 0 {
		t.Errorf("after two unasked periods: %v", c.entries)
	}
	// Period 0: every summary measures.
	fail = nil
	c0 := newVolumeCache(0)
	walks = 0
	c0.usage("/v", t0, measure)
	c0.usage("/v", t0, measure)
	if walks != 2 {
		t.Errorf("period 0: %d walks, want 2", walks)
	}
}
