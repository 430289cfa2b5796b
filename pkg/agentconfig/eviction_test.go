package agentconfig

import (
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/eviction"
)

func TestEvictionDefaults(t *testing.T) {
	c := Default()
	if len(c.EvictionHard) != 4 || c.EvictionHard["memory.available"] != "100Mi" || c.EvictionHard["nodefs.available"] != "10%" ||
		c.EvictionHard["nodefs.inodesFree"] != "5%" || c.EvictionHard["imagefs.available"] != "15%" {
		t.Errorf("evictionHard default %v", c.EvictionHard)
	}
	if c.EvictionPressureTransitionPeriod.Duration != 5*time.Minute || *c.MergeDefaultEvictionSettings || c.EvictionMaxPodGracePeriod != 0 {
		t.Errorf("defaults: transition %v merge %v maxGrace %d", c.EvictionPressureTransitionPeriod, *c.MergeDefaultEvictionSettings, c.EvictionMaxPodGracePeriod)
	}
	c = &Config{Config: eviction.Config{EvictionHard: map[string]string{}}}
	c.SetDefaults()
	if len(c.EvictionHard) != 0 {
		t.Errorf("an explicit empty evictionHard is kept empty, got %v", c.EvictionHard)
	}
}

// A config naming evictionHard loads (it was an unknown field), replaces
// the default set, or merges into it with mergeDefaultEvictionSettings.
func TestEvictionLoads(t *testing.T) {
	base := "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
	c, _, err := Decode([]byte(base + "evictionHard:\n  memory.available: 200Mi\nevictionPressureTransitionPeriod: 5s\nevictionMaxPodGracePeriod: 30\n" +
		"evictionSoft: {memory.available: 1Gi}\nevictionSoftGracePeriod: {memory.available: 1m}\nevictionMinimumReclaim: {memory.available: 0.5Gi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.EvictionHard) != 1 || c.EvictionHard["memory.available"] != "200Mi" || c.EvictionPressureTransitionPeriod.Duration != 5*time.Second ||
		c.EvictionMaxPodGracePeriod != 30 || c.EvictionSoft["memory.available"] != "1Gi" {
		t.Errorf("loaded %+v", c.Eviction())
	}
	if _, err := c.Validate(); err != nil {
		t.Errorf("validate: %v", err)
	}
	c, _, err = Decode([]byte(base + "mergeDefaultEvictionSettings: true\nevictionHard:\n  memory.available: 200Mi\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.EvictionHard) != 4 || c.EvictionHard["memory.available"] != "200Mi" || c.EvictionHard["imagefs.available"] != "15%" {
		t.Errorf("merged %v", c.EvictionHard)
	}
}

func TestValidateEviction(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"unknown signal", func(c *Config) { c.EvictionHard = map[string]string{"swap.available": "1Gi"} },
			"unsupported eviction signal swap.available"},
		{"percentage over 100", func(c *Config) { c.EvictionHard = map[string]string{"nodefs.available": "101%"} },
			"eviction percentage threshold nodefs.available must be <= 100%: 101%"},
		{"soft without grace", func(c *Config) { c.EvictionSoft = map[string]string{"memory.available": "1Gi"} },
			"grace period must be specified for the soft eviction threshold memory.available"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.mutate(c)
			_, err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}
