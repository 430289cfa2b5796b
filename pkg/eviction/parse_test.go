package eviction

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestParse(t *testing.T) {
	q := func(s string) *Value { v := resource.MustParse(s); return &Value{Quantity: &v} }
	pct := func(p float32) *Value { return &Value{Percentage: p} }
	th := func(s Signal, v *Value, grace time.Duration, reclaim *Value) Threshold {
		return Threshold{Signal: s, Operator: OpLessThan, Value: *v, GracePeriod: grace, MinReclaim: reclaim}
	}
	cases := []struct {
		name                       string
		hard, soft, grace, reclaim map[string]string
		allocatable                []string
		want                       []Threshold
		err                        string
	}{
		{name: "no values"},
		{
			name: "all values", hard: map[string]string{"memory.available": "150Mi"}, soft: map[string]string{"memory.available": "300Mi"},
			grace: map[string]string{"memory.available": "30s"}, reclaim: map[string]string{"memory.available": "0"},
			want: []Threshold{th(SignalMemoryAvailable, q("150Mi"), 0, q("0")), th(SignalMemoryAvailable, q("300Mi"), 30*time.Second, q("0"))},
		},
		{
			name: "percentages", hard: map[string]string{"memory.available": "10%"}, soft: map[string]string{"memory.available": "30%"},
			grace: map[string]string{"memory.available": "30s"}, reclaim: map[string]string{"memory.available": "5%"},
			want: []Threshold{th(SignalMemoryAvailable, pct(0.1), 0, pct(0.05)), th(SignalMemoryAvailable, pct(0.3), 30*time.Second, pct(0.05))},
		},
		{
			name: "disk and inodes", hard: map[string]string{"imagefs.available": "150Mi", "nodefs.inodesFree": "100Mi", "nodefs.available": "10.5%"},
			reclaim: map[string]string{"imagefs.available": "2Gi"},
			want:    []Threshold{th(SignalImageFsAvailable, q("150Mi"), 0, q("2Gi")), th(SignalNodeFsAvailable, pct(0.105), 0, nil), th(SignalNodeFsInodesFree, q("100Mi"), 0, nil)},
		},
		{name: "0% and 100% are ignored", hard: map[string]string{"memory.available": "0%", "nodefs.available": "100%"}},
		{
			name: "allocatable copies hard memory", hard: map[string]string{"memory.available": "100Mi"}, soft: map[string]string{"memory.available": "1Gi"},
			grace: map[string]string{"memory.available": "1m"}, allocatable: []string{"pods"},
			want: []Threshold{th(SignalMemoryAvailable, q("100Mi"), 0, nil), th(SignalMemoryAvailable, q("1Gi"), time.Minute, nil), th(SignalAllocatableMemoryAvailable, q("100Mi"), 0, nil)},
		},
		{name: "invalid signal", hard: map[string]string{"mem.available": "150Mi"}, err: "unsupported eviction signal mem.available"},
		{name: "swap is not a threshold signal", hard: map[string]string{"swap.available": "1Gi"}, err: "unsupported eviction signal swap.available"},
		{name: "hard negative", hard: map[string]string{"memory.available": "-150Mi"}, err: "eviction threshold memory.available must be positive: -150Mi"},
		{name: "hard zero", hard: map[string]string{"memory.available": "0"}, err: "eviction threshold memory.available must be positive: 0"},
		{name: "hard negative percentage", hard: map[string]string{"memory.available": "-15%"}, err: "eviction percentage threshold memory.available must be >= 0%: -15%"},
		{name: "over 100%", hard: map[string]string{"nodefs.available": "101%"}, err: "eviction percentage threshold nodefs.available must be <= 100%: 101%"},
		{name: "soft negative", soft: map[string]string{"memory.available": "-150Mi"}, err: "eviction threshold memory.available must be positive: -150Mi"},
		{name: "soft without grace period", soft: map[string]string{"memory.available": "150Mi"}, err: "grace period must be specified for the soft eviction threshold memory.available"},
		{
			name: "soft negative grace period", soft: map[string]string{"memory.available": "150Mi"}, grace: map[string]string{"memory.available": "-30s"},
			err: "invalid eviction grace period specified: -30s, must be a positive value",
		},
		{name: "grace period of an unknown signal", grace: map[string]string{"foo": "30s"}, err: "unsupported eviction signal foo"},
		{name: "negative reclaim", reclaim: map[string]string{"memory.available": "-300Mi"}, err: "negative eviction minimum reclaim specified for memory.available"},
		{name: "zero percent reclaim", reclaim: map[string]string{"nodefs.available": "0%"}, err: "eviction percentage minimum reclaim nodefs.available must be positive: 0%"},
		{name: "bad quantity", hard: map[string]string{"memory.available": "lots"}, err: "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(Config{EvictionHard: tc.hard, EvictionSoft: tc.soft, EvictionSoftGracePeriod: tc.grace, EvictionMinimumReclaim: tc.reclaim}, tc.allocatable)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].same(tc.want[i]) || !reclaimEqual(got[i].MinReclaim, tc.want[i].MinReclaim) {
					t.Errorf("threshold %d: %v (reclaim %v), want %v (reclaim %v)", i, got[i], got[i].MinReclaim, tc.want[i], tc.want[i].MinReclaim)
				}
			}
		})
	}
}

func reclaimEqual(a, b *Value) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.equal(*b)
}

func TestDefaults(t *testing.T) {
	var c Config
	c.SetDefaults()
	if len(c.EvictionHard) != 4 || c.EvictionHard["memory.available"] != "100Mi" || c.EvictionHard["nodefs.available"] != "10%" ||
		c.EvictionHard["nodefs.inodesFree"] != "5%" || c.EvictionHard["imagefs.available"] != "15%" {
		t.Errorf("evictionHard default: %v", c.EvictionHard)
	}
	if c.EvictionPressureTransitionPeriod.Duration != 5*time.Minute || c.EvictionMaxPodGracePeriod != 0 {
		t.Errorf("transition %v, max grace %d", c.EvictionPressureTransitionPeriod, c.EvictionMaxPodGracePeriod)
	}
	// Setting evictionHard replaces the defaults, unless they are merged.
	c = Config{EvictionHard: map[string]string{"memory.available": "1Gi"}}
	c.SetDefaults()
	if len(c.EvictionHard) != 1 {
		t.Errorf("replaced: %v", c.EvictionHard)
	}
	merge := true
	c = Config{EvictionHard: map[string]string{"memory.available": "1Gi"}, MergeDefaultEvictionSettings: &merge}
	c.SetDefaults()
	if len(c.EvictionHard) != 4 || c.EvictionHard["memory.available"] != "1Gi" {
		t.Errorf("merged: %v", c.EvictionHard)
	}
	if DefaultEvictionHard["memory.available"] != "100Mi" {
		t.Error("SetDefaults changed DefaultEvictionHard")
	}
}

func TestWithContainerFs(t *testing.T) {
	c := Config{}
	c.SetDefaults()
	ts, err := Parse(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	value := func(ts []Threshold, s Signal) string {
		for _, t := range ts {
			if t.Signal == s {
				return t.Value.String()
			}
		}
		return ""
	}
	for _, tc := range []struct {
		disks         Disks
		space, inodes string
	}{
		{Disks{}, "10%", "5%"},
		{Disks{DedicatedImageFs: true}, "15%", ""},
		{Disks{DedicatedImageFs: true, SplitContainerImageFs: true}, "10%", "5%"},
	} {
		got, err := WithContainerFs(ts, tc.disks)
		if err != nil {
			t.Fatal(err)
		}
		if v := value(got, SignalContainerFsAvailable); v != tc.space {
			t.Errorf("%+v: containerfs.available %q, want %q", tc.disks, v, tc.space)
		}
		if v := value(got, SignalContainerFsInodesFree); v != tc.inodes {
			t.Errorf("%+v: containerfs.inodesFree %q, want %q", tc.disks, v, tc.inodes)
		}
	}
	user, _ := Parse(Config{EvictionHard: map[string]string{"containerfs.available": "1Gi", "nodefs.available": "2Gi"}}, nil)
	got, err := WithContainerFs(user, Disks{})
	if err == nil || err.Error() != "found containerfs.available for hard eviction. ignoring" || value(got, SignalContainerFsAvailable) != "2Gi" {
		t.Errorf("user containerfs: %v %v", got, err)
	}
}
