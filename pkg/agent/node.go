package agent

import (
	"bufio"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/apiclient"
	"github.com/nodeagent/nodeagent/pkg/eviction"
)

// NodeName is --hostname-override, else the lower-cased hostname, as the
// kubelet names its node.
func NodeName(override string) (string, error) {
	name := override
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("node name: %w", err)
		}
		name = h
	}
	name = strings.ToLower(strings.TrimSpace(name))
	if name == "" {
		return "", fmt.Errorf("node name is empty")
	}
	return name, nil
}

// capacity is the node's CPUs, memory and maxPods; allocatable (which
// resource env vars default to when a limit is unset) holds back the
// reservations.
func capacity(cfg *agentconfig.Config) v1.ResourceList {
	rl := v1.ResourceList{
		v1.ResourceCPU:  *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		v1.ResourcePods: *resource.NewQuantity(int64(cfg.MaxPods), resource.DecimalSI),
	}
	if mem := memTotal(); mem > 0 {
		rl[v1.ResourceMemory] = *resource.NewQuantity(mem, resource.BinarySI)
	}
	return rl
}

func memTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, _ := strconv.ParseInt(fields[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

// ephemeralStorageDir is the directory whose filesystem is the node's
// ephemeral-storage capacity, "" when localStorageCapacityIsolation is
// false: upstream then reports no ephemeral-storage at all.
func ephemeralStorageDir(o Options) string {
	if !*o.Config.LocalStorageCapacityIsolation {
		return ""
	}
	return o.Flags.RootDir
}

// admissionAllocatable is what the node reports as allocatable, for the
// agent's own admission: capacity with the ephemeral-storage, less the
// reservations and the hard eviction thresholds.
func admissionAllocatable(o Options) v1.ResourceList {
	rl := capacity(o.Config)
	if q, ok := apiclient.EphemeralStorageCapacity(ephemeralStorageDir(o)); ok {
		rl[v1.ResourceEphemeralStorage] = q
	}
	return apiclient.Allocatable(rl, apiclient.AllocatableReservation(rl, o.Config.Reserved(), evictionThresholds(o.Config)))
}

// evictionThresholds are the configured eviction thresholds. The
// configuration was validated when loaded, so Parse does not fail here.
func evictionThresholds(cfg *agentconfig.Config) []eviction.Threshold {
	ts, _ := eviction.Parse(cfg.Eviction(), cfg.EnforceNodeAllocatable)
	return ts
}

// maxParallelImagePulls is maxParallelImagePulls, 0 when unset (no bound).
func maxParallelImagePulls(cfg *agentconfig.Config) int {
	if cfg.MaxParallelImagePulls == nil {
		return 0
	}
	return int(*cfg.MaxParallelImagePulls)
}
