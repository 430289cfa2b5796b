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
