package agentconfig

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// The kubelet's deprecated resource flags: its syntax (signal<quantity,
// key=value), its precedence over the config file (a map flag replaces
// the file's map), the file's values kept for flags not given.
func TestResourceFlags(t *testing.T) {
	file := writeConfig(t, header+`evictionHard: {memory.available: 300Mi, nodefs.available: 5%}
evictionSoft: {memory.available: 500Mi}
evictionSoftGracePeriod: {memory.available: 1m}
systemReserved: {cpu: 100m}
kubeReserved: {memory: 100Mi}
imageGCHighThresholdPercent: 90
imageGCLowThresholdPercent: 70
`)
	cfg, _ := resolve(t, "--config", file,
		"--eviction-hard=memory.available<100Mi,nodefs.available<10%", "--eviction-hard", "imagefs.available<15%",
		"--eviction-soft-grace-period=memory.available=1m30s",
		"--eviction-minimum-reclaim=imagefs.available=2Gi",
		"--eviction-pressure-transition-period=30s", "--eviction-max-pod-grace-period=20",
		"--enforce-node-allocatable=pods,system-reserved", "--system-reserved=cpu=200m,memory=500Mi",
		"--system-reserved-cgroup=/system.slice", "--kube-reserved-cgroup=/kube.slice",
		"--image-gc-high-threshold=80")
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"evictionHard (flag, repeated)", cfg.EvictionHard, map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "imagefs.available": "15%"}},
		{"evictionSoft (file)", cfg.EvictionSoft, map[string]string{"memory.available": "500Mi"}},
		{"evictionSoftGracePeriod", cfg.EvictionSoftGracePeriod, map[string]string{"memory.available": "1m30s"}},
		{"evictionMinimumReclaim", cfg.EvictionMinimumReclaim, map[string]string{"imagefs.available": "2Gi"}},
		{"evictionPressureTransitionPeriod", cfg.EvictionPressureTransitionPeriod.Duration, 30 * time.Second},
		{"evictionMaxPodGracePeriod", cfg.EvictionMaxPodGracePeriod, int32(20)},
		{"enforceNodeAllocatable", cfg.EnforceNodeAllocatable, []string{"pods", "system-reserved"}},
		{"systemReserved (flag replaces the file's map)", cfg.SystemReserved, map[string]string{"cpu": "200m", "memory": "500Mi"}},
		{"kubeReserved (file)", cfg.KubeReserved, map[string]string{"memory": "100Mi"}},
		{"systemReservedCgroup", cfg.SystemReservedCgroup, "/system.slice"},
		{"kubeReservedCgroup", cfg.KubeReservedCgroup, "/kube.slice"},
		{"imageGCHighThresholdPercent", *cfg.ImageGCHighThresholdPercent, int32(80)},
		{"imageGCLowThresholdPercent (file)", *cfg.ImageGCLowThresholdPercent, int32(70)},
	} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if _, err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
}

// Without a file the flags' defaults are the kubelet's, an empty
// --eviction-hard turns the hard thresholds off, and bad values are
// refused with the kubelet's messages.
func TestResourceFlagsDefaultsAndErrors(t *testing.T) {
	cfg, _ := resolve(t)
	if want := map[string]string{"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%"}; !reflect.DeepEqual(cfg.EvictionHard, want) {
		t.Errorf("default evictionHard %v", cfg.EvictionHard)
	}
	if cfg, _ := resolve(t, "--eviction-hard="); len(cfg.EvictionHard) != 0 || cfg.EvictionHard == nil {
		t.Errorf("--eviction-hard= gives %#v, want an empty map", cfg.EvictionHard)
	}
	for _, tt := range []struct{ args []string }{
		{[]string{"--eviction-hard=memory.available=100Mi"}},
		{[]string{"--system-reserved=cpu"}},
		{[]string{"--image-gc-high-threshold=x"}},
	} {
		fs := pflag.NewFlagSet("nodeagent", pflag.ContinueOnError)
		if _, _, _, err := Resolve(fs, tt.args); err == nil {
			t.Errorf("%v accepted", tt.args)
		}
	}
	cfg, _ = resolve(t, "--eviction-hard=memory.available<abc")
	if _, err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "quantities must match") {
		t.Errorf("bad threshold quantity: %v", err)
	}
	cfg, _ = resolve(t, "--image-gc-high-threshold=50", "--image-gc-low-threshold=60")
	if _, err := cfg.Validate(); err == nil {
		t.Errorf("low above high accepted")
	}
}
