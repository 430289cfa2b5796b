package podcgroup

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

const podName = "/nodeagent/kubepods/burstable/pod1234"

func write(t *testing.T, path, value string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(value), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// fakeV2 is a unified hierarchy whose QoS-level cgroups exist (the
// kernel gives each new cgroup its interface files; the fake has only
// the ones FS reads).
func fakeV2(t *testing.T) string {
	root := t.TempDir()
	write(t, filepath.Join(root, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc")
	for _, d := range []string{"", "nodeagent", "nodeagent/kubepods", "nodeagent/kubepods/burstable"} {
		write(t, filepath.Join(root, d, "cgroup.subtree_control"), "")
	}
	return root
}

// fakeV1 is a hybrid host like these machines: one hierarchy per
// controller, a name=systemd one and the unified mount.
func fakeV1(t *testing.T) string {
	root := t.TempDir()
	for _, h := range []string{"cpu", "cpuacct", "memory", "pids", "devices", "systemd", "unified"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(root, "cpuset", "cpuset.cpus"), "0-1\n")
	write(t, filepath.Join(root, "cpuset", "cpuset.mems"), "0\n")
	if err := os.Symlink("cpu", filepath.Join(root, "cpu,cpuacct")); err != nil {
		t.Fatal(err)
	}
	return root
}

func burstableWithLimits() ResourceConfig {
	return ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 << 20), PidsLimit: i64(512), HugePageLimit: map[int64]int64{}}
}

func TestApplyV2(t *testing.T) {
	root := fakeV2(t)
	fs := FS{Root: root}
	if !fs.Unified() {
		t.Fatal("fake v2 tree not seen as unified")
	}
	if fs.Exists(podName) {
		t.Fatal("pod cgroup exists before Apply")
	}
	if err := fs.Apply(podName, burstableWithLimits()); err != nil {
		t.Fatal(err)
	}
	if !fs.Exists(podName) {
		t.Error("pod cgroup missing after Apply")
	}
	dir := filepath.Join(root, podName)
	for file, want := range map[string]string{
		"cpu.weight": "17", // 102 shares
		"cpu.max":    "20000 100000",
		"memory.max": "209715200",
		"pids.max":   "512",
	} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// Every ancestor delegates the controllers the pod cgroup uses.
	for _, d := range []string{"", "nodeagent", "nodeagent/kubepods", "nodeagent/kubepods/burstable"} {
		if got := read(t, filepath.Join(root, d, "cgroup.subtree_control")); got != "+cpu +memory +hugetlb +pids" {
			t.Errorf("%s/cgroup.subtree_control = %q", d, got)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.subtree_control")); err == nil {
		t.Error("the pod cgroup's own subtree_control was written")
	}
}

func TestApplyV2UnlimitedAndHugePages(t *testing.T) {
	root := fakeV2(t)
	fs := FS{Root: root}
	best := ResourceConfig{CPUShares: u64(MinShares), HugePageLimit: map[int64]int64{}}
	if err := fs.Apply(podName, best); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, podName)
	for _, f := range []string{"cpu.max", "memory.max", "pids.max"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("%s written for a best-effort pod", f)
		}
	}
	if got := read(t, filepath.Join(dir, "cpu.weight")); got != "1" {
		t.Errorf("cpu.weight = %q, want 1", got)
	}
	// The kernel's hugetlb files: the requested size gets its limit,
	// the others 0, reservations are left alone.
	for _, f := range []string{"hugetlb.2MB.max", "hugetlb.1GB.max", "hugetlb.2MB.rsvd.max"} {
		write(t, filepath.Join(dir, f), "max")
	}
	unlimited := ResourceConfig{CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(-1), PidsLimit: i64(-1), HugePageLimit: map[int64]int64{2 << 20: 4 << 20}}
	if err := fs.Apply(podName, unlimited); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu.max": "max 100000", "memory.max": "max", "pids.max": "max",
		"hugetlb.2MB.max": "4194304", "hugetlb.1GB.max": "0", "hugetlb.2MB.rsvd.max": "max",
	} {
		if got := read(t, filepath.Join(dir, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
}

func TestApplyV1(t *testing.T) {
	root := fakeV1(t)
	fs := FS{Root: root}
	if fs.Unified() {
		t.Fatal("fake v1 tree seen as unified")
	}
	if err := fs.Apply(podName, burstableWithLimits()); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"cpu/" + podName + "/cpu.shares":               "102",
		"cpu/" + podName + "/cpu.cfs_period_us":        "100000",
		"cpu/" + podName + "/cpu.cfs_quota_us":         "20000",
		"memory/" + podName + "/memory.limit_in_bytes": "209715200",
		"pids/" + podName + "/pids.max":                "512",
		// New cpusets inherit their parents' cpus and memory nodes.
		"cpuset/nodeagent/cpuset.cpus":                    "0-1",
		"cpuset/nodeagent/kubepods/burstable/cpuset.mems": "0",
		"cpuset/" + podName + "/cpuset.cpus":              "0-1",
	} {
		if got := read(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// The pod cgroup is in every hierarchy, as runc makes it; links to a
	// hierarchy are not walked twice.
	for _, h := range []string{"cpuacct", "devices", "systemd", "unified"} {
		if _, err := os.Stat(filepath.Join(root, h, podName)); err != nil {
			t.Errorf("no pod cgroup in %s: %v", h, err)
		}
	}
	if !fs.Exists(podName) {
		t.Error("pod cgroup missing after Apply")
	}
	if err := os.Remove(filepath.Join(root, "devices", podName)); err != nil {
		t.Fatal(err)
	}
	if fs.Exists(podName) {
		t.Error("a pod cgroup missing from one hierarchy counts as existing")
	}
}

func TestApplyV1LeavesUnsetValues(t *testing.T) {
	root := fakeV1(t)
	fs := FS{Root: root}
	if err := fs.Apply(podName, ResourceConfig{CPUShares: u64(MinShares)}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"cpu/" + podName + "/cpu.cfs_quota_us", "memory/" + podName + "/memory.limit_in_bytes", "pids/" + podName + "/pids.max"} {
		if _, err := os.Stat(filepath.Join(root, f)); err == nil {
			t.Errorf("%s written for a best-effort pod", f)
		}
	}
}

func TestManagerWritesWhenNeeded(t *testing.T) {
	root := fakeV2(t)
	m := NewManager(root, Options{PidsLimit: 100})
	pod := podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))})
	memMax := filepath.Join(root, podName, "memory.max")
	if err := m.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, podName, "pids.max")); got != "100" {
		t.Errorf("pids.max = %q, want 100", got)
	}
	// Unchanged limits on an existing cgroup: nothing is written.
	write(t, memMax, "sentinel")
	if err := m.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, memMax); got != "sentinel" {
		t.Errorf("memory.max rewritten with unchanged limits: %q", got)
	}
	// Changed limits are written.
	pod.Spec.Containers[0].Resources.Limits = list("200m", "300Mi")
	if err := m.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, memMax); got != "314572800" {
		t.Errorf("memory.max = %q after a change, want 314572800", got)
	}
	// A cgroup removed behind the manager's back is made again.
	if err := os.RemoveAll(filepath.Join(root, podName)); err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, memMax); got != "314572800" {
		t.Errorf("memory.max = %q after re-creation", got)
	}
	m.Forget(podName)
	if len(m.applied) != 0 {
		t.Errorf("Forget left %v", m.applied)
	}
	// A cgroup that exists unknown to the manager (a restarted agent) is
	// adopted as it is; a later change is written.
	restarted := NewManager(root, Options{PidsLimit: 100})
	write(t, memMax, "sentinel")
	if err := restarted.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, memMax); got != "sentinel" {
		t.Errorf("memory.max of an existing cgroup rewritten after a restart: %q", got)
	}
	pod.Spec.Containers[0].Resources.Limits = list("200m", "100Mi")
	if err := restarted.Ensure(podName, pod); err != nil {
		t.Fatal(err)
	}
	if got := read(t, memMax); got != "104857600" {
		t.Errorf("memory.max = %q after a change, want 104857600", got)
	}
}

// The Manager reports each write as the kubelet's cgroup manager does:
// create for a missing cgroup, update for changed limits, nothing when it
// writes nothing; QoS tier writes are updates.
func TestManagerObservesOperations(t *testing.T) {
	root := fakeV2(t)
	var ops []string
	m := NewManager(root, Options{Observe: func(op string, _ time.Duration) { ops = append(ops, op) }})
	pod := podWith(nil, []v1.ResourceRequirements{res(list("100m", "100Mi"), list("200m", "200Mi"))})
	for _, limits := range []v1.ResourceList{list("200m", "200Mi"), list("200m", "200Mi"), list("200m", "300Mi")} {
		pod.Spec.Containers[0].Resources.Limits = limits
		if err := m.Ensure(podName, pod); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{OpCreate, OpUpdate}; !slices.Equal(ops, want) {
		t.Errorf("operations %v, want %v", ops, want)
	}
	ops = nil
	q := NewManager(root, Options{QOS: &QOSCgroups{Kubepods: "kubepods"}, Observe: func(op string, _ time.Duration) { ops = append(ops, op) }})
	q.updateQOS()
	if want := []string{OpUpdate}; !slices.Equal(ops, want) {
		t.Errorf("QoS operations %v, want %v", ops, want)
	}
}
