package podcgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ResourcePID is the kubelet's internal "pid" resource (pidlimit.PIDs):
// in the capacity the node cgroups are sized from, never in the Node's.
const ResourcePID v1.ResourceName = "pid"

// The enforceNodeAllocatable keys, as the kubelet spells them.
const (
	EnforcePods                        = "pods"
	EnforceSystemReserved              = "system-reserved"
	EnforceSystemReservedCompressible  = "system-reserved-compressible"
	EnforceKubeReserved                = "kube-reserved"
	EnforceKubeReservedCompressible    = "kube-reserved-compressible"
	defaultNodeAllocatableCgroupSuffix = "kubepods"
)

// NodeConfig is what the node-level cgroups are sized from (the kubelet's
// NodeAllocatableConfig with its internal capacity).
type NodeConfig struct {
	// CgroupRoot is the cgroupRoot the kubepods cgroup goes under.
	CgroupRoot string
	// Capacity is the node's, with the internal pid resource and the huge
	// pages (InternalCapacity).
	Capacity       v1.ResourceList
	SystemReserved v1.ResourceList
	KubeReserved   v1.ResourceList
	// Enforce is enforceNodeAllocatable.
	Enforce              []string
	SystemReservedCgroup string
	KubeReservedCgroup   string
}

// NodeCgroup is one write of the node plan.
type NodeCgroup struct {
	Name   string
	Config ResourceConfig
	// Existing is a reservation cgroup, which the agent limits but never
	// creates (the kubelet's enforceExistingCgroup); FailFormat is the
	// kubelet's message when that fails (%q cgroup, %v error).
	Existing   bool
	FailFormat string
	// Kind names the reservation in the kubelet's events ("system
	// reserved", "kube reserved").
	Kind string
}

// KubepodsName is the node allocatable cgroup under root.
func KubepodsName(root string) string {
	return strings.TrimRight(root, "/") + "/" + defaultNodeAllocatableCgroupSuffix
}

// PlanNode is the kubelet's node allocatable enforcement as writes: the
// kubepods cgroup gets the allocatable (capacity minus system and kube
// reserved, never minus the eviction threshold, which only the Node's
// allocatable loses) when "pods" is enforced, else the whole capacity
// (the cgroup's default cpu shares would starve the pods); then each
// enforced reservation on its existing cgroup.
func PlanNode(c NodeConfig) []NodeCgroup {
	has := func(k string) bool {
		for _, e := range c.Enforce {
			if e == k {
				return true
			}
		}
		return false
	}
	sizing := c.Capacity
	if has(EnforcePods) {
		sizing = NodeAllocatable(c.Capacity, c.SystemReserved, c.KubeReserved)
	}
	plan := []NodeCgroup{{Name: KubepodsName(c.CgroupRoot), Config: ForResources(sizing, false)}}
	for _, r := range []struct {
		key, cgroup, kind string
		reserved          v1.ResourceList
		cpuOnly           bool
		fail              string
	}{
		{EnforceSystemReserved, c.SystemReservedCgroup, "system reserved", c.SystemReserved, false, "Failed to enforce System Reserved Cgroup Limits on %q: %v"},
		{EnforceKubeReserved, c.KubeReservedCgroup, "kube reserved", c.KubeReserved, false, "Failed to enforce Kube Reserved Cgroup Limits on %q: %v"},
		{EnforceSystemReservedCompressible, c.SystemReservedCgroup, "system reserved", c.SystemReserved, true, "Failed to enforce System Reserved Compressible Cgroup Limits on %q: %v"},
		{EnforceKubeReservedCompressible, c.KubeReservedCgroup, "kube reserved", c.KubeReserved, true, "Failed to enforce Kube Reserved Compressible Cgroup Limits on %q: %v"},
	} {
		if has(r.key) {
			plan = append(plan, NodeCgroup{Name: r.cgroup, Config: ForResources(r.reserved, r.cpuOnly), Existing: true, FailFormat: r.fail, Kind: r.kind})
		}
	}
	return plan
}

// NodeAllocatable is the kubelet's getNodeAllocatableAbsolute: each
// capacity minus both reservations, at least 0.
func NodeAllocatable(capacity, systemReserved, kubeReserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range capacity {
		v := q.DeepCopy()
		v.Sub(systemReserved[name])
		v.Sub(kubeReserved[name])
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	return out
}

// ForResources is the kubelet's getCgroupConfig: cpu shares from the cpu,
// and unless cpuOnly (the -compressible enforcements) the memory limit,
// the pids limit and the huge page limits. A resource not listed is left
// alone.
func ForResources(rl v1.ResourceList, cpuOnly bool) ResourceConfig {
	var rc ResourceConfig
	if q, ok := rl[v1.ResourceCPU]; ok {
		shares := MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &shares
	}
	if cpuOnly {
		return rc
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		m := q.Value()
		rc.Memory = &m
	}
	if q, ok := rl[ResourcePID]; ok {
		p := q.Value()
		rc.PidsLimit = &p
	}
	rc.HugePageLimit = HugePageLimits(rl)
	return rc
}

// Host reads what the kubelet adds to the node's capacity for its own
// cgroups, under a /proc and a /sys root.
type Host struct{ Proc, Sys string }

// InternalCapacity is capacity with the kubelet's internal additions: pid
// (the lower of kernel.pid_max and kernel.threads-max, as pidlimit.Stats)
// and hugepages-<size> (pages × size for each size the kernel offers, as
// cAdvisor's machine info gives them).
func (h Host) InternalCapacity(capacity v1.ResourceList) v1.ResourceList {
	out := capacity.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	maxPID := int64(-1)
	for _, f := range []string{"sys/kernel/pid_max", "sys/kernel/threads-max"} {
		if n, err := readInt(filepath.Join(h.Proc, f)); err == nil && (maxPID < 0 || n < maxPID) {
			maxPID = n
		}
	}
	if maxPID >= 0 {
		out[ResourcePID] = *resource.NewQuantity(maxPID, resource.DecimalSI)
	}
	for size, pages := range h.hugePages() {
		out[v1.ResourceName(v1.ResourceHugePagesPrefix+resource.NewQuantity(size, resource.BinarySI).String())] =
			*resource.NewQuantity(size*pages, resource.BinarySI)
	}
	return out
}

// HugePageSizes are the page sizes in bytes the kernel offers.
func (h Host) HugePageSizes() []int64 {
	var out []int64
	for size := range h.hugePages() {
		out = append(out, size)
	}
	return out
}

// hugePages maps each page size to its number of pages
// (/sys/kernel/mm/hugepages/hugepages-<n>kB/nr_hugepages).
func (h Host) hugePages() map[int64]int64 {
	dirs, _ := filepath.Glob(filepath.Join(h.Sys, "kernel/mm/hugepages/hugepages-*kB"))
	out := map[int64]int64{}
	for _, d := range dirs {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(d), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			continue
		}
		n, err := readInt(filepath.Join(d, "nr_hugepages"))
		if err != nil {
			continue
		}
		out[kb<<10] = n
	}
	return out
}

func readInt(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// ApplyNode writes the plan: kubepods created when missing, the
// reservation cgroups only when they exist. It stops at the first
// reservation it cannot enforce, as the kubelet's container manager
// fails to start then; an error on kubepods (a memory limit below what
// the pods use: the kernel refuses it until evictions bring it down) is
// returned with the rest applied, for the caller to retry.
func (f FS) ApplyNode(plan []NodeCgroup) (kubepodsErr, reservedErr error) {
	for _, w := range plan {
		if !w.Existing {
			if err := f.Apply(w.Name, w.Config); err != nil {
				kubepodsErr = fmt.Errorf("Failed to update Node Allocatable Limits %q: %w", w.Name, err)
			}
			continue
		}
		if err := f.enforceExisting(w); err != nil {
			return kubepodsErr, fmt.Errorf(w.FailFormat, w.Name, err)
		}
	}
	return kubepodsErr, nil
}

// validatedHierarchy are the cgroup v1 hierarchies the kubelet checks a
// reservation cgroup in (its cgroup manager's Validate allowlist): other
// controllers, unknown to runc, may lack it.
var validatedHierarchy = map[string]bool{"cpu": true, "cpuacct": true, "cpuset": true, "memory": true, "systemd": true, "pids": true, "hugetlb": true}

func (f FS) enforceExisting(w NodeCgroup) error {
	dirs, err := f.dirs(w.Name)
	if err != nil {
		return err
	}
	var missing []string
	for _, d := range dirs {
		rel, _ := filepath.Rel(f.Root, d)
		if !f.Unified() && !validatedHierarchy[strings.SplitN(rel, "/", 2)[0]] {
			continue
		}
		if _, err := os.Stat(d); err != nil {
			missing = append(missing, d)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("cgroup %q has some missing paths: %v", w.Name, strings.Join(missing, ", "))
	}
	return f.Apply(w.Name, w.Config)
}
