package imagegc

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The reasons of kubelet_image_garbage_collected_total, as upstream's.
const (
	ReasonAge   = "age"
	ReasonSpace = "space"
)

// Policy is the kubelet's ImageGCPolicy.
type Policy struct {
	// HighThresholdPercent: at or above this use of the image filesystem
	// images are removed; LowThresholdPercent: down to this use.
	HighThresholdPercent int
	LowThresholdPercent  int
	// MinAge: an image seen for less time is never removed for space.
	MinAge time.Duration
	// MaxAge: an unused image not used for longer is removed whatever the
	// use, once the manager has run for longer (0: off).
	MaxAge time.Duration
}

// Image is what the manager knows of one image.
type Image struct {
	ID   string
	Size int64
	// Pinned: the runtime pins it, or it is the sandbox image.
	Pinned bool
	// InUse: a container (running or not) refers to it.
	InUse         bool
	FirstDetected time.Time
	LastUsed      time.Time // zero: never seen in use
}

// Usage is the image filesystem's size and free space.
type Usage struct {
	CapacityBytes, AvailableBytes int64
}

// Removal is one image to remove and why.
type Removal struct {
	ID     string
	Size   int64
	Reason string
}

// Plan is what one garbage collection removes, in order.
type Plan struct {
	Age   []Removal // unused for longer than MaxAge
	Space []Removal // least recently used first, to reach the low threshold
	// Spare are the eligible images after Space, in the same order: as
	// upstream's freeSpace, a removal that fails is made up for by the
	// next ones.
	Spare []Removal
	// InvalidCapacity: the image filesystem reported a capacity of 0; no
	// space plan was made.
	InvalidCapacity bool
	// UsagePercent is the use the space plan was made for (after the age
	// removals), AmountToFree what it must free (0: under the high
	// threshold), Freeable what its removals free.
	UsagePercent  int
	CapacityBytes int64
	AmountToFree  int64
	Freeable      int64
}

// Shortfall says the space plan cannot reach the low threshold.
func (p Plan) Shortfall() bool { return p.Freeable < p.AmountToFree }

func (p Plan) String() string {
	ids := func(rs []Removal) string {
		s := make([]string, len(rs))
		for i, r := range rs {
			s[i] = fmt.Sprintf("%s(%d)", r.ID, r.Size)
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("age=%s space=%s spare=%s usage=%d%% toFree=%d freeable=%d invalidCapacity=%t",
		ids(p.Age), ids(p.Space), ids(p.Spare), p.UsagePercent, p.AmountToFree, p.Freeable, p.InvalidCapacity)
}

// ComputePlan is one garbage collection at now by a manager that began at
// began: the unused images older than MaxAge, then, when the use reaches
// the high threshold, the least recently used ones down to the low
// threshold. usage nil (unknown) makes no space plan. Upstream reads the
// use after the age removals; here their sizes count as freed.
func ComputePlan(images []Image, usage *Usage, now, began time.Time, p Policy) Plan {
	candidates := evictionOrder(images)
	var plan Plan
	candidates, plan.Age = oldImages(candidates, now, began, p.MaxAge)
	if usage == nil {
		return plan
	}
	capacity, available := usage.CapacityBytes, usage.AvailableBytes
	if capacity == 0 {
		plan.InvalidCapacity = true
		return plan
	}
	available += sum(plan.Age)
	available = min(available, capacity)
	plan.CapacityBytes = capacity
	plan.UsagePercent = 100 - int(available*100/capacity)
	if plan.UsagePercent < p.HighThresholdPercent {
		return plan
	}
	plan.AmountToFree = capacity*int64(100-p.LowThresholdPercent)/100 - available
	plan.Space, plan.Spare = splitAt(spaceRemovals(candidates, now, p.MinAge), plan.AmountToFree)
	plan.Freeable = sum(plan.Space)
	return plan
}

// UnusedPlan removes every unused image old enough (the eviction
// manager's DeleteUnusedImages).
func UnusedPlan(images []Image, now time.Time, p Policy) []Removal {
	return spaceRemovals(evictionOrder(images), now, p.MinAge)
}

// evictionOrder drops the images in use and the pinned ones and sorts the
// rest by last use, then first detection (then ID, for a stable order).
func evictionOrder(images []Image) []Image {
	var out []Image
	for _, im := range images {
		if !im.InUse && !im.Pinned {
			out = append(out, im)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.LastUsed.Equal(b.LastUsed) {
			return a.LastUsed.Before(b.LastUsed)
		}
		if !a.FirstDetected.Equal(b.FirstDetected) {
			return a.FirstDetected.Before(b.FirstDetected)
		}
		return a.ID < b.ID
	})
	return out
}

// oldImages splits off the images not used for longer than maxAge; none
// until the manager has run for longer than maxAge, lest a restart
// (which forgets the last uses) remove what was in use just before.
func oldImages(images []Image, now, began time.Time, maxAge time.Duration) (rest []Image, old []Removal) {
	if maxAge == 0 || now.Sub(began) <= maxAge {
		return images, nil
	}
	for _, im := range images {
		if now.Sub(im.LastUsed) > maxAge {
			old = append(old, Removal{ID: im.ID, Size: im.Size, Reason: ReasonAge})
			continue
		}
		rest = append(rest, im)
	}
	return rest, old
}

// spaceRemovals is every image in order but those used at now and those
// younger than minAge (just pulled, about to be used).
func spaceRemovals(images []Image, now time.Time, minAge time.Duration) []Removal {
	var out []Removal
	for _, im := range images {
		if !im.LastUsed.Before(now) || now.Sub(im.FirstDetected) < minAge {
			continue
		}
		out = append(out, Removal{ID: im.ID, Size: im.Size, Reason: ReasonSpace})
	}
	return out
}

// splitAt splits rs after the removal that brings the bytes freed to
// toFree.
func splitAt(rs []Removal, toFree int64) (take, rest []Removal) {
	var freed int64
	for i, r := range rs {
		if freed += r.Size; freed >= toFree {
			return rs[:i+1], rs[i+1:]
		}
	}
	return rs, nil
}

func sum(rs []Removal) int64 {
	var n int64
	for _, r := range rs {
		n += r.Size
	}
	return n
}
