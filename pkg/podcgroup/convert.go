package podcgroup

import "math"

// The kubelet's CPU conversions (pkg/kubelet/cm/helpers_linux.go), bounded
// by the kernel's limits on cpu.shares and the CFS quota.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	MilliCPUToCPU = 1000
	// QuotaPeriod is the default CFS period, 100 ms in µs.
	QuotaPeriod = 100000
	// MinQuotaPeriod is the smallest quota the kernel takes, 1 ms in µs.
	MinQuotaPeriod = 1000
)

// MilliCPUToShares converts a cpu request to cpu.shares; no request gets
// the minimum, as the kernel gives an unset cgroup.
func MilliCPUToShares(milli int64) uint64 {
	if milli == 0 {
		return MinShares
	}
	shares := milli * SharesPerCPU / MilliCPUToCPU
	return uint64(min(max(shares, MinShares), MaxShares))
}

// MilliCPUToQuota converts a cpu limit to a CFS quota over period µs;
// no limit is no quota (0).
func MilliCPUToQuota(milli, period int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*period/MilliCPUToCPU, MinQuotaPeriod)
}

// SharesToWeight converts cpu.shares [2, 262144] to cgroup v2 cpu.weight
// [1, 10000] as opencontainers/cgroups ConvertCPUSharesToCgroupV2Value
// does since kubernetes#131216 (a quadratic in log2 that maps the default
// 1024 shares to the default weight 100); 0 stays unset.
func SharesToWeight(shares uint64) uint64 {
	switch {
	case shares == 0:
		return 0
	case shares <= MinShares:
		return 1
	case shares >= MaxShares:
		return 10000
	}
	l := math.Log2(float64(shares))
	exponent := (l*l+125*l)/612.0 - 7.0/34.0
	return uint64(math.Ceil(math.Pow(10, exponent)))
}
