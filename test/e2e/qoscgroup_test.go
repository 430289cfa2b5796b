package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/test/framework"
)

// The node-level cgroups as the kubelet sizes them: kubepods holds the
// node allocatable (capacity minus systemReserved and kubeReserved; the
// eviction threshold stays out of the cgroup), besteffort has the minimum
// cpu shares, and burstable's shares follow the Burstable pods' cpu
// requests as they come and go.
func TestQOSCgroups(t *testing.T) {
	a := newAgentWith(t, "systemReserved: {memory: 128Mi}\nkubeReserved: {memory: 256Mi, pid: \"100\"}")
	kubepods := ctrd.CgroupRoot + "/kubepods"
	memTotal := hostMemTotal(t)
	page := int64(os.Getpagesize())
	wantMem := (memTotal - 384<<20) / page * page // the kernel rounds limits down to pages
	// cg names <hierarchy>/<path under kubepods> on the host.
	cg := func(file string) string {
		hierarchy, rest, _ := strings.Cut(file, "/")
		return filepath.Join("/sys/fs/cgroup", hierarchy, kubepods, rest)
	}
	for file, want := range map[string]string{
		"memory/memory.limit_in_bytes": strconv.FormatInt(wantMem, 10),
		"cpu/cpu.shares":               strconv.Itoa(goruntime.NumCPU() * 1024),
		"pids/pids.max":                strconv.FormatInt(hostMaxPID(t)-100, 10),
	} {
		path := cg(file)
		waitUntil(t, podTimeout, fmt.Sprintf("%s = %s", path, want), func() bool { return readOr(path) == want })
	}
	bestEffort, burstable := cg("cpu/besteffort/cpu.shares"), cg("cpu/burstable/cpu.shares")
	if got := readTrim(t, bestEffort); got != "2" {
		t.Errorf("%s = %q, want 2", bestEffort, got)
	}
	waitUntil(t, podTimeout, burstable+" = 2 with no pods", func() bool { return readOr(burstable) == "2" })

	if err := a.WriteManifest("burst.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: burst}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    resources:
      requests: {cpu: 300m}
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("burst", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	// 300m is 307 shares (the kubelet's MilliCPUToShares).
	waitUntil(t, podTimeout, burstable+" = 307 with the pod", func() bool { return readOr(burstable) == "307" })
	if err := a.RemoveManifest("burst.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitGone("burst", podTimeout); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, podTimeout, burstable+" = 2 once the pod went", func() bool { return readOr(burstable) == "2" })
	if got := readTrim(t, bestEffort); got != "2" {
		t.Errorf("%s = %q after the pod, want 2", bestEffort, got)
	}
}

func readOr(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func hostMemTotal(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no MemTotal in /proc/meminfo")
	return 0
}

// hostMaxPID is the kubelet's pid capacity: the lower of kernel.pid_max
// and kernel.threads-max.
func hostMaxPID(t *testing.T) int64 {
	t.Helper()
	var out int64 = -1
	for _, f := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		n, err := strconv.ParseInt(readTrim(t, f), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if out < 0 || n < out {
			out = n
		}
	}
	return out
}
