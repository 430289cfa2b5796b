package agentconfig

import (
	"strings"
	"testing"
	"time"
)

func TestImageGCDefaults(t *testing.T) {
	c := Default()
	if *c.ImageGCHighThresholdPercent != 85 || *c.ImageGCLowThresholdPercent != 80 ||
		c.ImageMinimumGCAge.Duration != 2*time.Minute || c.ImageMaximumGCAge.Duration != 0 || *c.NodeStatusMaxImages != 50 {
		t.Errorf("defaults: high %d low %d min %v max %v maxImages %d", *c.ImageGCHighThresholdPercent, *c.ImageGCLowThresholdPercent,
			c.ImageMinimumGCAge, c.ImageMaximumGCAge, *c.NodeStatusMaxImages)
	}
	c = &Config{ImageGCHighThresholdPercent: ptr[int32](0), ImageGCLowThresholdPercent: ptr[int32](0), NodeStatusMaxImages: ptr[int32](-1)}
	c.SetDefaults()
	if *c.ImageGCHighThresholdPercent != 0 || *c.NodeStatusMaxImages != -1 {
		t.Error("set values were overwritten by defaults")
	}
}

func TestValidateImageGC(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string // "" means valid
	}{
		{"high above 100", func(c *Config) { c.ImageGCHighThresholdPercent = ptr[int32](101) },
			"imageGCHighThresholdPercent: Invalid value: 101: must be between 0 and 100, inclusive"},
		{"low below 0", func(c *Config) { c.ImageGCLowThresholdPercent = ptr[int32](-1) },
			"imageGCLowThresholdPercent: Invalid value: -1: must be between 0 and 100, inclusive"},
		{"low not below high", func(c *Config) { c.ImageGCLowThresholdPercent = ptr[int32](85) },
			"imageGCLowThresholdPercent: Invalid value: 85: must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) 85"},
		{"high 100 turns GC off", func(c *Config) { c.ImageGCHighThresholdPercent = ptr[int32](100) }, ""},
		{"negative maximum age", func(c *Config) { c.ImageMaximumGCAge.Duration = -time.Second },
			`imageMaximumGCAge: Invalid value: "-1s": must not be negative`},
		{"maximum age not above minimum", func(c *Config) { c.ImageMaximumGCAge.Duration = time.Minute },
			`imageMaximumGCAge: Invalid value: "1m0s": must be greater than imageMinimumGCAge 2m0s`},
		{"maximum age above minimum", func(c *Config) { c.ImageMaximumGCAge.Duration = time.Hour }, ""},
		{"max images below -1", func(c *Config) { c.NodeStatusMaxImages = ptr[int32](-2) },
			"nodeStatusMaxImages: Invalid value: -2: must be -1 or greater"},
		{"no image cap", func(c *Config) { c.NodeStatusMaxImages = ptr[int32](-1) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.StaticPodPath = "/etc/kubernetes/manifests"
			tt.mutate(c)
			_, err := c.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
