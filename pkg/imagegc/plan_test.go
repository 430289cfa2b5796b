package imagegc

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

var (
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	policy = Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute}
)

func ids(rs []Removal) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID+"/"+r.Reason)
	}
	return out
}

// usageAt is a 1000-byte filesystem at pct percent use.
func usageAt(pct int64) *Usage { return &Usage{CapacityBytes: 1000, AvailableBytes: 1000 - pct*10} }

func TestComputePlan(t *testing.T) {
	now := t0.Add(time.Hour)
	old := t0 // first seen an hour ago
	base := []Image{
		{ID: "a", Size: 30, FirstDetected: old, LastUsed: now.Add(-30 * time.Minute)},
		{ID: "b", Size: 30, FirstDetected: old, LastUsed: now.Add(-50 * time.Minute)},
		{ID: "c", Size: 30, FirstDetected: old},
	}
	with := func(f func([]Image)) []Image {
		im := append([]Image(nil), base...)
		f(im)
		return im
	}
	cases := []struct {
		name     string
		images   []Image
		usage    *Usage
		policy   Policy
		began    time.Time
		want     []string
		toFree   int64
		short    bool
		invalid  bool
		usagePct int
		spare    []string // eligible after the removals
	}{
		{name: "under the high threshold: nothing", images: base, usage: usageAt(84), usagePct: 84},
		{name: "at the high threshold: least recently used first down to the low", images: base, usage: usageAt(85),
			want: []string{"c/space", "b/space"}, spare: []string{"a/space"}, toFree: 50, usagePct: 85},
		{name: "never used goes before used, then oldest use", images: base, usage: usageAt(95),
			want: []string{"c/space", "b/space", "a/space"}, toFree: 150, short: true, usagePct: 95},
		{name: "ties on last use by first detection", usage: usageAt(85), usagePct: 85, toFree: 50,
			images: []Image{{ID: "x", Size: 60, FirstDetected: old.Add(time.Minute)}, {ID: "y", Size: 60, FirstDetected: old}},
			want:   []string{"y/space"}, spare: []string{"x/space"}},
		{name: "in use is never removed", usage: usageAt(90), usagePct: 90, toFree: 100, short: true,
			images: with(func(im []Image) { im[2].InUse, im[2].LastUsed = true, now }), want: []string{"b/space", "a/space"}},
		{name: "pinned (or the sandbox image) is never removed", usage: usageAt(90), usagePct: 90, toFree: 100, short: true,
			images: with(func(im []Image) { im[1].Pinned = true }), want: []string{"c/space", "a/space"}},
		{name: "younger than the minimum age is skipped", usage: usageAt(90), usagePct: 90, toFree: 100, short: true,
			images: with(func(im []Image) { im[2].FirstDetected = now.Add(-time.Minute) }), want: []string{"b/space", "a/space"}},
		{name: "nothing eligible: a shortfall", usage: usageAt(90), usagePct: 90, toFree: 100, short: true,
			images: []Image{{ID: "p", Size: 500, Pinned: true, FirstDetected: old}}},
		{name: "capacity 0 is invalid", images: base, usage: &Usage{}, invalid: true},
		{name: "unknown usage: no space plan", images: base},
		{name: "available above capacity is capped", images: base, usage: &Usage{CapacityBytes: 1000, AvailableBytes: 2000}},
		{name: "maximum age removes unused images not used for longer", images: base, usage: usageAt(10), usagePct: 4,
			policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: 40 * time.Minute},
			began:  t0, want: []string{"c/age", "b/age"}},
		{name: "maximum age waits until the manager ran for longer", images: base, usage: usageAt(10), usagePct: 10,
			policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 40 * time.Minute}, began: now.Add(-40 * time.Minute)},
		{name: "age removals count toward the space to free", images: base, usage: usageAt(87), usagePct: 84,
			policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 55 * time.Minute}, began: t0,
			want: []string{"c/age"}},
		{name: "age then space", images: base, usage: usageAt(92), usagePct: 89, toFree: 90,
			policy: Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MaxAge: 55 * time.Minute}, began: t0,
			want: []string{"c/age", "b/space", "a/space"}, short: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.policy
			if p == (Policy{}) {
				p = policy
			}
			began := tc.began
			if began.IsZero() {
				began = now
			}
			plan := ComputePlan(tc.images, tc.usage, now, began, p)
			if got := append(ids(plan.Age), ids(plan.Space)...); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("removals = %v, want %v (%s)", got, tc.want, plan)
			}
			if got := ids(plan.Spare); !reflect.DeepEqual(got, tc.spare) {
				t.Errorf("spare = %v, want %v (%s)", got, tc.spare, plan)
			}
			if plan.AmountToFree != tc.toFree || plan.Shortfall() != tc.short || plan.InvalidCapacity != tc.invalid || plan.UsagePercent != tc.usagePct {
				t.Errorf("plan %s: want toFree=%d shortfall=%t invalid=%t usage=%d", plan, tc.toFree, tc.short, tc.invalid, tc.usagePct)
			}
		})
	}
}

func TestUnusedPlan(t *testing.T) {
	now := t0.Add(time.Hour)
	images := []Image{
		{ID: "used", Size: 1, InUse: true, LastUsed: now, FirstDetected: t0},
		{ID: "pinned", Size: 1, Pinned: true, FirstDetected: t0},
		{ID: "young", Size: 1, FirstDetected: now.Add(-time.Minute)},
		{ID: "old", Size: 1, FirstDetected: t0},
		{ID: "older", Size: 1, FirstDetected: t0, LastUsed: t0},
	}
	if got, want := ids(UnusedPlan(images, now, policy)), []string{"old/space", "older/space"}; !reflect.DeepEqual(got, want) {
		t.Errorf("UnusedPlan = %v, want %v", got, want)
	}
}

func TestShortfallMessage(t *testing.T) {
	got := ShortfallMessage(90, 10<<30, 1234)
	want := "Insufficient free disk space on the node's image filesystem (90% of 10.0 GiB used). " +
		"Failed to free sufficient space by deleting unused images (freed 1234 bytes). " +
		"Investigate disk usage, as it could be used by active images, logs, volumes, or other data."
	if got != want {
		t.Errorf("message\n got %q\nwant %q", got, want)
	}
	// Upstream's formatSize: TiB is its largest unit.
	for n, want := range map[int64]string{1023: "1023 B", 1536: "1.5 KiB", 256 << 20: "256.0 MiB", 3 << 40: "3.0 TiB", 2 << 50: "2048.0 TiB"} {
		if got := formatSize(n); got != want {
			t.Errorf("formatSize(%d) = %q, want %q", n, got, want)
		}
	}
	if !strings.Contains(ComputePlan(nil, usageAt(90), t0, t0, policy).String(), "toFree=100") {
		t.Error("plan string lacks the amount to free")
	}
}
