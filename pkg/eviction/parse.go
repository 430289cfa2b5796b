package eviction

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Parse is the kubelet's ParseThresholdConfig: hard thresholds, then soft
// ones with their grace periods, minimum reclaims on both, and, when
// enforceNodeAllocatable has "pods", an allocatableMemory.available copy of
// each hard memory.available threshold. Errors carry the kubelet's text.
// Statements are read in signal order so that errors and results are
// stable (the kubelet ranges over a map).
func Parse(c Config, enforceNodeAllocatable []string) ([]Threshold, error) {
	hard, err := parseStatements(c.EvictionHard)
	if err != nil {
		return nil, err
	}
	soft, err := parseStatements(c.EvictionSoft)
	if err != nil {
		return nil, err
	}
	grace, err := parseGracePeriods(c.EvictionSoftGracePeriod)
	if err != nil {
		return nil, err
	}
	reclaims, err := parseMinimumReclaims(c.EvictionMinimumReclaim)
	if err != nil {
		return nil, err
	}
	for i := range soft {
		period, ok := grace[soft[i].Signal]
		if !ok {
			return nil, fmt.Errorf("grace period must be specified for the soft eviction threshold %v", soft[i].Signal)
		}
		soft[i].GracePeriod = period
	}
	out := append(hard, soft...)
	for i := range out {
		if r, ok := reclaims[out[i].Signal]; ok {
			out[i].MinReclaim = &r
		}
	}
	for _, key := range enforceNodeAllocatable {
		if key == nodeAllocatableEnforcementKey {
			return withAllocatable(out), nil
		}
	}
	return out, nil
}

func withAllocatable(ts []Threshold) []Threshold {
	out := append([]Threshold{}, ts...)
	for _, t := range ts {
		if t.Signal == SignalMemoryAvailable && t.Hard() {
			out = append(out, Threshold{Signal: SignalAllocatableMemoryAvailable, Operator: t.Operator, Value: t.Value, MinReclaim: t.MinReclaim})
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }

func parseStatements(m map[string]string) ([]Threshold, error) {
	var out []Threshold
	for _, k := range sortedKeys(m) {
		t, err := parseStatement(Signal(k), m[k])
		if err != nil {
			return nil, err
		}
		if t != nil {
			out = append(out, *t)
		}
	}
	return out, nil
}

// parseStatement returns nil for the statements the kubelet ignores
// ("0%" and "100%").
func parseStatement(s Signal, val string) (*Threshold, error) {
	if !validSignal(s) {
		return nil, fmt.Errorf("unsupported eviction signal %v", s)
	}
	if strings.HasSuffix(val, "%") {
		if val == "0%" || val == "100%" {
			return nil, nil
		}
		p, err := parsePercentage(val)
		if err != nil {
			return nil, err
		}
		if p < 0 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be >= 0%%: %s", s, val)
		}
		if p > 1 {
			return nil, fmt.Errorf("eviction percentage threshold %v must be <= 100%%: %s", s, val)
		}
		return &Threshold{Signal: s, Operator: OpLessThan, Value: Value{Percentage: p}}, nil
	}
	q, err := resource.ParseQuantity(val)
	if err != nil {
		return nil, err
	}
	if q.Sign() <= 0 {
		return nil, fmt.Errorf("eviction threshold %v must be positive: %s", s, &q)
	}
	return &Threshold{Signal: s, Operator: OpLessThan, Value: Value{Quantity: &q}}, nil
}

func parsePercentage(in string) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimRight(in, "%"), 32)
	if err != nil {
		return 0, err
	}
	return float32(v) / 100, nil
}

func parseGracePeriods(m map[string]string) (map[Signal]time.Duration, error) {
	out := map[Signal]time.Duration{}
	for _, k := range sortedKeys(m) {
		s := Signal(k)
		if !validSignal(s) {
			return nil, fmt.Errorf("unsupported eviction signal %v", s)
		}
		d, err := time.ParseDuration(m[k])
		if err != nil {
			return nil, err
		}
		if d < 0 {
			return nil, fmt.Errorf("invalid eviction grace period specified: %v, must be a positive value", m[k])
		}
		out[s] = d
	}
	return out, nil
}

func parseMinimumReclaims(m map[string]string) (map[Signal]Value, error) {
	out := map[Signal]Value{}
	for _, k := range sortedKeys(m) {
		s, val := Signal(k), m[k]
		if !validSignal(s) {
			return nil, fmt.Errorf("unsupported eviction signal %v", s)
		}
		if strings.HasSuffix(val, "%") {
			p, err := parsePercentage(val)
			if err != nil {
				return nil, err
			}
			if p <= 0 {
				return nil, fmt.Errorf("eviction percentage minimum reclaim %v must be positive: %s", s, val)
			}
			out[s] = Value{Percentage: p}
			continue
		}
		q, err := resource.ParseQuantity(val)
		if err != nil {
			return nil, err
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("negative eviction minimum reclaim specified for %v", s)
		}
		out[s] = Value{Quantity: &q}
	}
	return out, nil
}
