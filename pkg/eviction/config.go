package eviction

import (
	"fmt"
	"maps"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultEvictionHard is the kubelet's evictionHard default on Linux
// (pkg/kubelet/eviction/defaults_linux.go).
var DefaultEvictionHard = map[string]string{
	"memory.available":  "100Mi",
	"nodefs.available":  "10%",
	"nodefs.inodesFree": "5%",
	"imagefs.available": "15%",
}

// DefaultPressureTransitionPeriod is evictionPressureTransitionPeriod's
// default.
const DefaultPressureTransitionPeriod = 5 * time.Minute

// nodeAllocatableEnforcementKey is the enforceNodeAllocatable entry that
// makes allocatableMemory.available thresholds from memory.available.
const nodeAllocatableEnforcementKey = "pods"

// Config is the eviction part of a KubeletConfiguration, under its field
// names, for the agent's configuration to embed.
type Config struct {
	EvictionHard                     map[string]string `json:"evictionHard,omitempty"`
	EvictionSoft                     map[string]string `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod          map[string]string `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMinimumReclaim           map[string]string `json:"evictionMinimumReclaim,omitempty"`
	EvictionPressureTransitionPeriod metav1.Duration   `json:"evictionPressureTransitionPeriod,omitempty"`
	EvictionMaxPodGracePeriod        int32             `json:"evictionMaxPodGracePeriod,omitempty"`
	// MergeDefaultEvictionSettings true fills the signals evictionHard
	// leaves out from DefaultEvictionHard; otherwise a set evictionHard
	// disables the signals it does not name (the only field with defaults).
	MergeDefaultEvictionSettings *bool `json:"mergeDefaultEvictionSettings,omitempty"`
}

// SetDefaults applies the kubelet's defaults: evictionHard when unset (or
// merged key by key), the 5m transition period.
func (c *Config) SetDefaults() {
	switch {
	case c.EvictionHard == nil:
		c.EvictionHard = maps.Clone(DefaultEvictionHard)
	case c.MergeDefaultEvictionSettings != nil && *c.MergeDefaultEvictionSettings:
		for k, v := range DefaultEvictionHard {
			if _, ok := c.EvictionHard[k]; !ok {
				c.EvictionHard[k] = v
			}
		}
	}
	if c.EvictionPressureTransitionPeriod.Duration == 0 {
		c.EvictionPressureTransitionPeriod.Duration = DefaultPressureTransitionPeriod
	}
}

// Operator relates a signal's observation to its threshold; the kubelet
// has only LessThan.
type Operator string

// OpLessThan: the threshold is met when available < value.
const OpLessThan Operator = "LessThan"

// Value is a threshold's quantity or, when Quantity is nil, its fraction
// of the signal's capacity (0.1 for "10%").
type Value struct {
	Quantity   *resource.Quantity
	Percentage float32
}

// Of resolves v against a capacity, as the kubelet's GetThresholdQuantity.
func (v Value) Of(capacity int64) resource.Quantity {
	if v.Quantity != nil {
		return v.Quantity.DeepCopy()
	}
	return *resource.NewQuantity(int64(float64(capacity)*float64(v.Percentage)), resource.BinarySI)
}

func (v Value) equal(o Value) bool {
	if (v.Quantity == nil) != (o.Quantity == nil) {
		return false
	}
	if v.Quantity != nil {
		return v.Quantity.Cmp(*o.Quantity) == 0
	}
	return v.Percentage == o.Percentage
}

func (v Value) String() string {
	if v.Quantity != nil {
		return v.Quantity.String()
	}
	return strconv.FormatFloat(float64(v.Percentage)*100, 'g', 6, 64) + "%"
}

// Threshold is one eviction threshold: hard when GracePeriod is zero.
type Threshold struct {
	Signal      Signal
	Operator    Operator
	Value       Value
	GracePeriod time.Duration
	MinReclaim  *Value
}

// Hard reports whether eviction follows as soon as the threshold is met.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// Key identifies a threshold across syncs and restarts (the kubelet keys
// its maps by the struct, whose quantities are pointers into the config).
func (t Threshold) Key() string {
	return fmt.Sprintf("%s<%s/%s", t.Signal, t.Value, t.GracePeriod)
}

func (t Threshold) same(o Threshold) bool {
	return t.GracePeriod == o.GracePeriod && t.Operator == o.Operator && t.Signal == o.Signal && t.Value.equal(o.Value)
}

func (t Threshold) String() string {
	return fmt.Sprintf("threshold(signal=%v, operator=%v, value=%v, gracePeriod=%v)", t.Signal, t.Operator, t.Value, t.GracePeriod)
}

// Reservation is the kubelet's hardEvictionReservation: what the hard
// memory.available and nodefs.available thresholds hold back from the
// node's allocatable memory and ephemeral-storage, resolved against
// capacity. Soft thresholds reserve nothing.
func Reservation(ts []Threshold, capacity v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for _, t := range ts {
		if !t.Hard() || t.Operator != OpLessThan {
			continue
		}
		var name v1.ResourceName
		switch t.Signal {
		case SignalMemoryAvailable:
			name = v1.ResourceMemory
		case SignalNodeFsAvailable:
			name = v1.ResourceEphemeralStorage
		default:
			continue
		}
		c := capacity[name]
		out[name] = t.Value.Of(c.Value())
	}
	return out
}
