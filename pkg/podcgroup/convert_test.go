package podcgroup

import (
	"fmt"
	"testing"
)

func TestMilliCPUToShares(t *testing.T) {
	for _, tc := range []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {10, 10}, {100, 102}, {1000, 1024}, {2500, 2560}, {300000, 262144},
	} {
		if got := MilliCPUToShares(tc.milli); got != tc.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tc.milli, got, tc.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	for _, tc := range []struct{ milli, period, want int64 }{
		{0, QuotaPeriod, 0}, {1, QuotaPeriod, 1000}, {10, QuotaPeriod, 1000}, {100, QuotaPeriod, 10000},
		{1000, QuotaPeriod, 100000}, {2500, QuotaPeriod, 250000}, {200, 5000, 1000}, {200, 50000, 10000},
	} {
		if got := MilliCPUToQuota(tc.milli, tc.period); got != tc.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tc.milli, tc.period, got, tc.want)
		}
	}
}

// The conversion's fixed points (minimum, kernel default 1024 → 100,
// maximum) and values between.
func TestSharesToWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{0: 0, 2: 1, 1: 1, 1024: 100, 102: 17, 512: 59, 262144: 10000, 300000: 10000} {
		t.Run(fmt.Sprint(shares), func(t *testing.T) {
			if got := SharesToWeight(shares); got != want {
				t.Errorf("SharesToWeight(%d) = %d, want %d", shares, got, want)
			}
		})
	}
}

func TestPageSizeName(t *testing.T) {
	for size, want := range map[int64]string{2 << 20: "2MB", 1 << 30: "1GB", 64 << 10: "64KB"} {
		if got, err := pageSizeName(size); err != nil || got != want {
			t.Errorf("pageSizeName(%d) = %q, %v; want %q", size, got, err, want)
		}
	}
	if _, err := pageSizeName(1000); err == nil {
		t.Error("pageSizeName(1000): want an error")
	}
}
