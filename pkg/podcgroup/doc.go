// Package podcgroup is the kubelet's pod container manager on cgroupfs:
// the pod-level cgroup (<cgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>)
// the agent creates before the pod's sandbox, with the limits the kubelet
// derives from the pod (pkg/kubelet/cm ResourceConfigForPod).
//
// ForPod is pure: pod in, ResourceConfig out (cpu shares from the
// requests, a CFS quota when every container — or the pod-level
// resources — limits cpu, a memory limit likewise, huge pages, the
// pod's overhead added, podPidsLimit). FS writes a ResourceConfig into a
// cgroup v1 tree (one hierarchy per controller under the mount root) or a
// cgroup v2 one (cpu.weight, cpu.max, memory.max, pids.max). Manager ties
// the two together for the pod workers: Ensure creates or updates a pod's
// cgroup, Forget drops what it remembers once the cgroup is removed.
//
// The node-level cgroups are the kubelet's container manager's
// (pkg/kubelet/cm): PlanNode sizes kubepods from the node allocatable
// (capacity, with the internal pid and huge page resources, minus
// systemReserved and kubeReserved; never minus the eviction threshold)
// when enforceNodeAllocatable has "pods", else from the capacity, and
// limits the systemReservedCgroup / kubeReservedCgroup to their
// reservations when enforced; FS.ApplyNode writes that at agent start.
// PlanQOS is the QoS manager's update: besteffort gets 2 cpu shares,
// burstable the summed cpu requests of the Burstable pods, both unbounded
// huge pages. A Manager given Options.QOS rewrites the tiers whenever a
// pod cgroup comes, changes its cpu request or goes, and every QOSPeriod
// (RunQOS). MemoryQoS (memory.min) and QOSReserved are not here:
// both are off by default upstream, and the agent has no feature gates.
package podcgroup
