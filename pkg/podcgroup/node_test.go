package podcgroup

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func node(cpu, mem, pid string) v1.ResourceList {
	l := list(cpu, mem)
	if pid != "" {
		l[ResourcePID] = resource.MustParse(pid)
	}
	return l
}

// kubepods gets capacity minus the reservations with "pods", the capacity
// without; the reservation cgroups get their reservation (cpu only for
// the -compressible keys).
func TestPlanNode(t *testing.T) {
	capacity := node("4", "8Gi", "32768")
	capacity["hugepages-2Mi"] = resource.MustParse("64Mi")
	system, kube := node("500m", "1Gi", "1000"), node("", "512Mi", "")
	cases := []struct {
		name    string
		enforce []string
		want    []NodeCgroup
	}{
		{"pods", []string{"pods"}, []NodeCgroup{
			{Name: "/nodeagent/kubepods", Config: ResourceConfig{CPUShares: u64(3584), Memory: i64(6656 << 20), PidsLimit: i64(31768), HugePageLimit: map[int64]int64{2 << 20: 64 << 20}}},
		}},
		{"none", []string{"none"}, []NodeCgroup{
			{Name: "/nodeagent/kubepods", Config: ResourceConfig{CPUShares: u64(4096), Memory: i64(8 << 30), PidsLimit: i64(32768), HugePageLimit: map[int64]int64{2 << 20: 64 << 20}}},
		}},
		{"reserved", []string{"pods", "system-reserved", "kube-reserved-compressible"}, []NodeCgroup{
			{Name: "/nodeagent/kubepods", Config: ResourceConfig{CPUShares: u64(3584), Memory: i64(6656 << 20), PidsLimit: i64(31768), HugePageLimit: map[int64]int64{2 << 20: 64 << 20}}},
			{Name: "/system", Config: ResourceConfig{CPUShares: u64(512), Memory: i64(1 << 30), PidsLimit: i64(1000), HugePageLimit: map[int64]int64{}}, Existing: true, Kind: "system reserved",
				FailFormat: "Failed to enforce System Reserved Cgroup Limits on %q: %v"},
			{Name: "/kube", Config: ResourceConfig{}, Existing: true, Kind: "kube reserved",
				FailFormat: "Failed to enforce Kube Reserved Compressible Cgroup Limits on %q: %v"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanNode(NodeConfig{CgroupRoot: "/nodeagent/", Capacity: capacity, SystemReserved: system, KubeReserved: kube,
				Enforce: tc.enforce, SystemReservedCgroup: "/system", KubeReservedCgroup: "/kube"})
			if len(got) != len(tc.want) {
				t.Fatalf("plan %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if g, w := describe(got[i]), describe(tc.want[i]); g != w {
					t.Errorf("write %d:\n got %s\nwant %s", i, g, w)
				}
			}
		})
	}
}

func describe(w NodeCgroup) string {
	var b strings.Builder
	b.WriteString(w.Name + " existing=" + strconv.FormatBool(w.Existing) + " kind=" + w.Kind + " fail=" + w.FailFormat)
	rc := w.Config
	if rc.CPUShares != nil {
		b.WriteString(" shares=" + strconv.FormatUint(*rc.CPUShares, 10))
	}
	if rc.Memory != nil {
		b.WriteString(" memory=" + strconv.FormatInt(*rc.Memory, 10))
	}
	if rc.PidsLimit != nil {
		b.WriteString(" pids=" + strconv.FormatInt(*rc.PidsLimit, 10))
	}
	for s, l := range rc.HugePageLimit {
		b.WriteString(" hugetlb" + strconv.FormatInt(s, 10) + "=" + strconv.FormatInt(l, 10))
	}
	if rc.HugePageLimit == nil {
		b.WriteString(" hugetlb=unset")
	}
	return b.String()
}

// A reservation larger than the capacity leaves 0, not a negative limit.
func TestNodeAllocatableFloorsAtZero(t *testing.T) {
	got := NodeAllocatable(node("1", "1Gi", ""), node("2", "512Mi", ""), node("", "1Gi", ""))
	if cpu, mem := got[v1.ResourceCPU], got[v1.ResourceMemory]; !cpu.IsZero() || !mem.IsZero() {
		t.Errorf("allocatable cpu %s memory %s, want 0 and 0", &cpu, &mem)
	}
}

func TestInternalCapacity(t *testing.T) {
	proc, sys := t.TempDir(), t.TempDir()
	write(t, filepath.Join(proc, "sys/kernel/pid_max"), "32768\n")
	write(t, filepath.Join(proc, "sys/kernel/threads-max"), "19000\n")
	write(t, filepath.Join(sys, "kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"), "3\n")
	write(t, filepath.Join(sys, "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"), "0\n")
	h := Host{Proc: proc, Sys: sys}
	got := h.InternalCapacity(node("2", "4Gi", ""))
	for name, want := range map[v1.ResourceName]string{"pid": "19k", "hugepages-2Mi": "6Mi", "hugepages-1Gi": "0", "cpu": "2", "memory": "4Gi"} {
		if q := got[name]; q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s = %s, want %s", name, &q, want)
		}
	}
	if sizes := h.HugePageSizes(); len(sizes) != 2 {
		t.Errorf("huge page sizes %v, want 2", sizes)
	}
}

func TestApplyNodeV1(t *testing.T) {
	root := fakeV1(t)
	fs := FS{Root: root}
	plan := PlanNode(NodeConfig{CgroupRoot: "/nodeagent", Capacity: node("2", "4Gi", "4096"), KubeReserved: node("", "1Gi", "96"),
		Enforce: []string{"pods", "kube-reserved"}, KubeReservedCgroup: "/kube"})
	kubepodsErr, reservedErr := fs.ApplyNode(plan)
	if kubepodsErr != nil {
		t.Fatal(kubepodsErr)
	}
	want := `Failed to enforce Kube Reserved Cgroup Limits on "/kube": cgroup "/kube" has some missing paths: `
	if reservedErr == nil || !strings.HasPrefix(reservedErr.Error(), want) {
		t.Fatalf("missing reserved cgroup: %v, want %q...", reservedErr, want)
	}
	for file, want := range map[string]string{
		"cpu/nodeagent/kubepods/cpu.shares":               "2048",
		"memory/nodeagent/kubepods/memory.limit_in_bytes": strconv.Itoa(3 << 30),
		"pids/nodeagent/kubepods/pids.max":                "4000",
	} {
		if got := read(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	// Only the hierarchies the kubelet validates need the cgroup.
	for _, h := range []string{"cpu", "cpuacct", "cpuset", "memory", "pids", "systemd"} {
		mkdir(t, filepath.Join(root, h, "kube"))
	}
	if _, err := fs.ApplyNode(plan); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(root, "memory/kube/memory.limit_in_bytes")); got != strconv.Itoa(1<<30) {
		t.Errorf("kube reserved memory limit %q", got)
	}
}

func TestApplyNodeV2(t *testing.T) {
	root := fakeV2(t)
	fs := FS{Root: root}
	plan := PlanNode(NodeConfig{CgroupRoot: "/nodeagent", Capacity: node("2", "4Gi", "4096"), SystemReserved: node("1", "1Gi", ""),
		Enforce: []string{"pods", "system-reserved-compressible"}, SystemReservedCgroup: "/system"})
	write(t, filepath.Join(root, "system", "cgroup.subtree_control"), "")
	if k, r := fs.ApplyNode(plan); k != nil || r != nil {
		t.Fatal(k, r)
	}
	for file, want := range map[string]string{
		"nodeagent/kubepods/cpu.weight": strconv.FormatUint(SharesToWeight(1024), 10),
		"nodeagent/kubepods/memory.max": strconv.Itoa(3 << 30),
		"nodeagent/kubepods/pids.max":   "4096",
		"system/cpu.weight":             strconv.FormatUint(SharesToWeight(1024), 10),
	} {
		if got := read(t, filepath.Join(root, file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}
	if exists(filepath.Join(root, "system/memory.max")) {
		t.Error("system-reserved-compressible limited memory")
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
