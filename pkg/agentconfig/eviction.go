package agentconfig

import "github.com/nodeagent/nodeagent/pkg/eviction"

// Eviction is the eviction part of the configuration, for
// eviction.NewPolicy.
func (c *Config) Eviction() eviction.Config { return c.Config }

// setEvictionDefaults applies the kubelet's: the default evictionHard
// (merged key by key with mergeDefaultEvictionSettings), the 5m
// transition period, mergeDefaultEvictionSettings false.
func (c *Config) setEvictionDefaults() {
	c.Config.SetDefaults()
	defaultPtr(&c.MergeDefaultEvictionSettings, false)
}

// validateEviction parses the thresholds as the kubelet does at start
// (ParseThresholdConfig), so that a bad one fails the load with the
// kubelet's error rather than later in the agent.
func (c *Config) validateEviction() error {
	_, err := eviction.Parse(c.Eviction(), c.EnforceNodeAllocatable)
	return err
}
