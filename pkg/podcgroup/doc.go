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
// The QoS-level cgroups (kubepods, burstable, besteffort) are created on
// the way, without limits of their own: their sizing (node allocatable,
// the burstable/besteffort shares) belongs to a QoS container manager,
// which would write through the same FS.
package podcgroup
