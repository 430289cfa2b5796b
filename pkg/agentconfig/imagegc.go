package agentconfig

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Image garbage collection and node status image defaults (the kubelet's
// v1beta1 defaults).
const (
	DefaultImageGCHighThresholdPercent = 85
	DefaultImageGCLowThresholdPercent  = 80
	DefaultImageMinimumGCAge           = 2 * time.Minute
	DefaultNodeStatusMaxImages         = 50
)

func (c *Config) setImageGCDefaults() {
	defaultPtr(&c.ImageGCHighThresholdPercent, DefaultImageGCHighThresholdPercent)
	defaultPtr(&c.ImageGCLowThresholdPercent, DefaultImageGCLowThresholdPercent)
	defaultDuration(&c.ImageMinimumGCAge.Duration, DefaultImageMinimumGCAge)
	defaultPtr(&c.NodeStatusMaxImages, DefaultNodeStatusMaxImages)
}

// validateImageGC checks the image garbage collection fields with the
// kubelet's rules and wording (pkg/kubelet/apis/config/validation).
func (c *Config) validateImageGC() field.ErrorList {
	var errs field.ErrorList
	high, low := deref(c.ImageGCHighThresholdPercent), deref(c.ImageGCLowThresholdPercent)
	if high < 0 || high > 100 {
		errs = append(errs, field.Invalid(field.NewPath("imageGCHighThresholdPercent"), high, "must be between 0 and 100, inclusive"))
	}
	if low < 0 || low > 100 {
		errs = append(errs, field.Invalid(field.NewPath("imageGCLowThresholdPercent"), low, "must be between 0 and 100, inclusive"))
	}
	if low >= high {
		errs = append(errs, field.Invalid(field.NewPath("imageGCLowThresholdPercent"), low,
			fmt.Sprintf("must be less than imageGCHighThresholdPercent (--image-gc-high-threshold) %d", high)))
	}
	maxAge, minAge := c.ImageMaximumGCAge.Duration, c.ImageMinimumGCAge.Duration
	if maxAge < 0 {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(), "must not be negative"))
	}
	if maxAge > 0 && maxAge <= minAge {
		errs = append(errs, field.Invalid(field.NewPath("imageMaximumGCAge"), maxAge.String(),
			fmt.Sprintf("must be greater than imageMinimumGCAge %v", minAge)))
	}
	if n := deref(c.NodeStatusMaxImages); n < -1 {
		errs = append(errs, field.Invalid(field.NewPath("nodeStatusMaxImages"), n, "must be -1 or greater"))
	}
	return errs
}
