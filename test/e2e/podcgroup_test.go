package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// The pod cgroup the agent makes before the sandbox carries the pod's
// limits: pod-level resources (spec.resources) for one pod, the
// containers' limits plus spec.overhead for the other, podPidsLimit for
// both; the containers run inside it; it goes with the pod.
func TestPodCgroupLimits(t *testing.T) {
	a := newAgentWith(t, "podPidsLimit: 256")
	// memory.stat's hierarchical_memory_limit is the tightest limit on
	// the way up: inside the container, the pod cgroup's.
	script := `echo memcg=$(grep :memory: /proc/self/cgroup | cut -d: -f3); ` +
		`echo hier=$(grep ^hierarchical_memory_limit /sys/fs/cgroup/memory/memory.stat | cut -d' ' -f2); ` +
		`trap 'exit 0' TERM; while true; do sleep 1; done`
	manifests := map[string]string{
		"plr.yaml": fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: plr}
spec:
  terminationGracePeriodSeconds: 2
  resources:
    requests: {cpu: 200m, memory: 64Mi}
    limits: {cpu: 500m, memory: 128Mi}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
    env:
    - name: MEM_LIMIT
      valueFrom: {resourceFieldRef: {resource: limits.memory}}
`, framework.BusyboxImage, "echo envmem=$MEM_LIMIT; "+script),
		"ovh.yaml": fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: ovh}
spec:
  terminationGracePeriodSeconds: 2
  overhead: {cpu: 50m, memory: 16Mi}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
    resources:
      requests: {cpu: 250m, memory: 64Mi}
      limits: {cpu: 250m, memory: 64Mi}
`, framework.BusyboxImage, script),
	}
	for name, m := range manifests {
		if err := a.WriteManifest(name, m); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		pod     string
		qos     v1.PodQOSClass
		memory  int64
		quota   string
		shares  string
		qosPath string
		inside  int64 // the tighter of the pod's and the container's memory limits
	}{
		{"plr", v1.PodQOSBurstable, 128 << 20, "50000", "204", "/kubepods/burstable/pod", 128 << 20},
		{"ovh", v1.PodQOSGuaranteed, 80 << 20, "30000", "307", "/kubepods/pod", 64 << 20},
	}
	var dirs []string
	for _, tc := range cases {
		p, err := a.WaitPod(tc.pod, podTimeout, running)
		if err != nil {
			t.Fatal(err)
		}
		if p.Status.QOSClass != tc.qos {
			t.Errorf("%s: qosClass %s, want %s", tc.pod, p.Status.QOSClass, tc.qos)
		}
		parent := sandboxCgroupParent(t, string(p.UID))
		if want := ctrd.CgroupRoot + tc.qosPath + string(p.UID); parent != want {
			t.Errorf("%s: sandbox cgroup parent %q, want %q", tc.pod, parent, want)
		}
		for file, want := range map[string]string{
			"memory/memory.limit_in_bytes": strconv.FormatInt(tc.memory, 10),
			"cpu/cpu.cfs_quota_us":         tc.quota,
			"cpu/cpu.cfs_period_us":        "100000",
			"cpu/cpu.shares":               tc.shares,
			"pids/pids.max":                "256",
		} {
			hierarchy, name := filepath.Split(file)
			path := filepath.Join("/sys/fs/cgroup", hierarchy, parent, name)
			if got := readTrim(t, path); got != want {
				t.Errorf("%s: %s = %q, want %q", tc.pod, path, got, want)
			}
			dirs = append(dirs, filepath.Dir(path))
		}
		if got := waitLog(t, a, p, "c", 0, "memcg="); !strings.HasPrefix(got, "memcg="+parent+"/") {
			t.Errorf("%s: container's memory cgroup %q, want one under %s", tc.pod, got, parent)
		}
		if got, want := waitLog(t, a, p, "c", 0, "hier="), "hier="+strconv.FormatInt(tc.inside, 10); got != want {
			t.Errorf("%s: container sees %q, want %q", tc.pod, got, want)
		}
	}
	// The downward API reads the container's unset limit as the pod's.
	plr, err := a.Pod("plr")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := waitLog(t, a, plr, "c", 0, "envmem="), "envmem="+strconv.Itoa(128<<20); got != want {
		t.Errorf("plr: container env %q, want %q", got, want)
	}
	for name := range manifests {
		if err := a.RemoveManifest(name); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		if err := a.WaitGone(tc.pod, podTimeout); err != nil {
			t.Fatal(err)
		}
	}
	waitRuntimeEmpty(t, podTimeout)
	for _, d := range dirs {
		waitUntil(t, podTimeout, "pod cgroup "+d+" to be removed", func() bool { return gone(d) })
	}
}

// sandboxCgroupParent is the cgroup parent the agent gave the pod's
// sandbox, as the runtime reports its config.
func sandboxCgroupParent(t *testing.T, uid string) string {
	t.Helper()
	ctx := context.Background()
	sbs, err := cri.ListPodSandbox(ctx, &criv1.PodSandboxFilter{LabelSelector: map[string]string{nart.LabelPodUID: uid}})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of %s: %v, %v", uid, sbs, err)
	}
	st, err := cri.PodSandboxStatus(ctx, sbs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Config struct {
			Linux struct {
				CgroupParent string `json:"cgroup_parent"`
			} `json:"linux"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(st.Info["info"]), &info); err != nil {
		t.Fatalf("sandbox info: %v", err)
	}
	return info.Config.Linux.CgroupParent
}

func readTrim(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// With cgroupsPerQOS off the kubelet makes no pod cgroup: the sandbox's
// cgroup parent is the cgroupRoot itself, and no limit is set above the
// containers' own.
func TestNoPodCgroupWithoutCgroupsPerQOS(t *testing.T) {
	// enforceNodeAllocatable must be empty too: its default, [pods],
	// needs the QoS hierarchy (the kubelet refuses the combination).
	a := newAgentWith(t, "cgroupsPerQOS: false\nenforceNodeAllocatable: []\npodPidsLimit: 256")
	if err := a.WriteManifest("flat.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: flat}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo memcg=$(grep :memory: /proc/self/cgroup | cut -d: -f3); trap 'exit 0' TERM; while true; do sleep 1; done"]
    resources:
      requests: {cpu: 100m, memory: 32Mi}
      limits: {cpu: 200m, memory: 64Mi}
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("flat", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if parent := sandboxCgroupParent(t, string(p.UID)); parent != ctrd.CgroupRoot {
		t.Errorf("sandbox cgroup parent %q, want %q", parent, ctrd.CgroupRoot)
	}
	pods, _ := filepath.Glob("/sys/fs/cgroup/*" + ctrd.CgroupRoot + "/kubepods/*pod" + string(p.UID))
	more, _ := filepath.Glob("/sys/fs/cgroup/*" + ctrd.CgroupRoot + "/kubepods/*/pod" + string(p.UID))
	if len(pods)+len(more) > 0 {
		t.Errorf("pod cgroups made with cgroupsPerQOS off: %v", append(pods, more...))
	}
	got := waitLog(t, a, p, "c", 0, "memcg=")
	id := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	if want := "memcg=" + ctrd.CgroupRoot + "/" + id; got != want {
		t.Errorf("container's memory cgroup %q, want %q", got, want)
	}
	if err := a.RemoveManifest("flat.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitGone("flat", podTimeout); err != nil {
		t.Fatal(err)
	}
	waitRuntimeEmpty(t, podTimeout)
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup/memory", ctrd.CgroupRoot)); err != nil {
		t.Errorf("the cgroup root went with the pod: %v", err)
	}
}
