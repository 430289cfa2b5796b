package resourcemetrics

import (
	"fmt"
	"math"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// usage is metrics-server's resourceUsage: CPU as the rate of the
// cumulative counter between prev and last (nanocores), memory as last's
// working set, over the window between the two timestamps. The rate is
// rounded to the nearest nanocore where metrics-server truncates, so that
// a float division's last bit does not show as 249999999n for 250m.
func usage(last, prev Point) (v1.ResourceList, time.Duration, error) {
	if last.CPU < prev.CPU {
		return nil, 0, fmt.Errorf("unexpected decrease in cumulative CPU usage value")
	}
	window := last.Timestamp.Sub(prev.Timestamp)
	if window <= 0 {
		return nil, 0, fmt.Errorf("points at %s and %s are not in order", prev.Timestamp, last.Timestamp)
	}
	nanocores := float64(last.CPU-prev.CPU) / window.Seconds()
	return v1.ResourceList{
		v1.ResourceCPU:    quantity(uint64(math.Round(nanocores)), resource.DecimalSI, -9),
		v1.ResourceMemory: quantity(last.Memory, resource.BinarySI, 0),
	}, window, nil
}

// quantity is metrics-server's uint64Quantity: values past int64 lose one
// decimal digit rather than overflow.
func quantity(v uint64, format resource.Format, scale resource.Scale) resource.Quantity {
	q := *resource.NewScaledQuantity(int64(v), scale)
	if v > math.MaxInt64 {
		q = *resource.NewScaledQuantity(int64(v/10), scale+1)
	}
	q.Format = format
	return q
}
