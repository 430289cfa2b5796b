package e2e

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const loopTERM = "trap 'echo got TERM; exit 0' TERM; while true; do sleep 1; done"

func twoContainerPod(firstGreeting string) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: change}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: changed
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "echo ` + firstGreeting + `; ` + loopTERM + `"]
  - name: untouched
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "` + loopTERM + `"]
`
}

func containerIDs(p *v1.Pod) map[string]string {
	ids := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		ids[cs.Name] = cs.ContainerID
	}
	return ids
}

func TestManifestChangeRestartsOnlyChangedContainer(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("change.yaml", twoContainerPod("v1")); err != nil {
		t.Fatal(err)
	}
	before, err := a.WaitPod("change", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	old := containerIDs(before)
	if err := a.WriteManifest("change.yaml", twoContainerPod("v2")); err != nil {
		t.Fatal(err)
	}
	after, err := a.WaitPod("change", podTimeout, func(p *v1.Pod) bool {
		return running(p) && containerIDs(p)["changed"] != old["changed"]
	})
	if err != nil {
		t.Fatal(err)
	}
	if after.UID != before.UID {
		t.Errorf("pod UID changed %s -> %s: the whole pod was replaced", before.UID, after.UID)
	}
	if got := containerIDs(after)["untouched"]; got != old["untouched"] {
		t.Errorf("untouched container restarted: %s -> %s", old["untouched"], got)
	}
	if cs := status(t, after, "changed"); cs.RestartCount != 1 {
		t.Errorf("changed container restartCount = %d, want 1", cs.RestartCount)
	}
	if cs := status(t, after, "untouched"); cs.RestartCount != 0 {
		t.Errorf("untouched container restartCount = %d, want 0", cs.RestartCount)
	}
	if got := waitLog(t, a, after, "changed", 1, "v"); got != "v2" {
		t.Errorf("new container logged %q, want v2", got)
	}
	if got := readLog(t, a, after, "changed", 0); !strings.Contains(got, "got TERM") {
		t.Errorf("old container was not stopped with SIGTERM; its log: %q", got)
	}
}

func TestManifestRemovalStopsPodGracefully(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("graceful.yaml", `apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "`+loopTERM+`"]
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("graceful", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the log open: the agent deletes it with the pod, the open file
	// stays readable.
	logPath := filepath.Join(nart.PodLogsDir(a.LogsDir, p.Namespace, p.Name, p.UID), nart.ContainerLogPath("c", 0))
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := a.RemoveManifest("graceful.yaml"); err != nil {
		t.Fatal(err)
	}
	// The container handles SIGTERM at once: the pod must be gone long
	// before its 60 s grace period ends.
	if err := a.WaitGone("graceful", 50*time.Second); err != nil {
		t.Fatal(err)
	}
	waitRuntimeEmpty(t, 50*time.Second)
	if !fileContains(f, "got TERM") {
		t.Errorf("the container did not receive SIGTERM")
	}
	// The sandbox goes first; the log directory and the pod's cgroup (the
	// test agent's cgroupRoot is /nodeagent-e2e) follow in the same cleanup.
	waitUntil(t, 30*time.Second, "the pod's log directory to be removed", func() bool {
		return gone(filepath.Dir(filepath.Dir(logPath)))
	})
	cg := "/sys/fs/cgroup/memory/nodeagent-e2e/kubepods/besteffort/pod" + string(p.UID)
	waitUntil(t, 30*time.Second, "pod cgroup "+cg+" to be removed", func() bool { return gone(cg) })
}

func TestContainerIgnoringSIGTERMIsKilledAfterGracePeriod(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("stubborn.yaml", `apiVersion: v1
kind: Pod
metadata: {name: stubborn}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "trap 'echo ignoring TERM' TERM; while true; do sleep 1; done"]
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("stubborn", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	cid := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
	removed := time.Now()
	if err := a.RemoveManifest("stubborn.yaml"); err != nil {
		t.Fatal(err)
	}
	// Watch the container until it exits: SIGKILL gives exit code 137.
	var exit int32 = -1
	for exit < 0 && time.Since(removed) < podTimeout {
		st, err := cri.ContainerStatus(context.Background(), cid, false)
		if err != nil {
			t.Fatalf("container vanished before its exit was seen: %v", err)
		}
		if st.Status.State == criv1.ContainerState_CONTAINER_EXITED {
			exit = st.Status.ExitCode
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stoppedAfter := time.Since(removed)
	if exit != 137 {
		t.Errorf("exit code %d, want 137 (SIGKILL after the grace period)", exit)
	}
	// A lower bound only: the agent must have waited the grace period.
	if stoppedAfter < 3*time.Second {
		t.Errorf("container killed after %s, before its 3 s grace period", stoppedAfter)
	}
	if err := a.WaitGone("stubborn", podTimeout); err != nil {
		t.Fatal(err)
	}
}

func fileContains(f *os.File, s string) bool {
	if _, err := f.Seek(0, 0); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

func TestInvalidManifestDoesNotDisturbOthers(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("good.yaml", imagePod("good", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	good, err := a.WaitPod("good", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: broken\nspec: [\n"); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("invalid.yaml", imagePod("Invalid_Name", framework.BusyboxImage, "Sometimes")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"broken.yaml", "invalid.yaml", "spec.containers[0].imagePullPolicy", "metadata.name"} {
		if err := a.WaitLog(want, podTimeout); err != nil {
			t.Errorf("%v", err)
		}
	}
	// The good pod keeps running, untouched.
	after, err := a.WaitPod("good", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if containerIDs(after)["c"] != containerIDs(good)["c"] {
		t.Errorf("the good pod's container was restarted")
	}
	pods, err := a.Pods()
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 {
		t.Errorf("agent lists %d pods, want only the good one", len(pods))
	}
}

// A pod-level change (here the hostname) needs a new sandbox: the pod is
// recreated in place, keeping its UID, and runs with the new setting.
func TestPodLevelManifestChangeRecreatesTheSandbox(t *testing.T) {
	a := newAgent(t)
	manifest := func(host string) string {
		return `apiVersion: v1
kind: Pod
metadata: {name: host}
spec:
  hostname: ` + host + `
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "echo hostname=$(hostname); ` + loopTERM + `"]
`
	}
	if err := a.WriteManifest("host.yaml", manifest("first")); err != nil {
		t.Fatal(err)
	}
	before, err := a.WaitPod("host", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	sandboxes := sandboxIDs(t, string(before.UID))
	if err := a.WriteManifest("host.yaml", manifest("second")); err != nil {
		t.Fatal(err)
	}
	after, err := a.WaitPod("host", podTimeout, func(p *v1.Pod) bool {
		return running(p) && containerIDs(p)["c"] != containerIDs(before)["c"]
	})
	if err != nil {
		t.Fatal(err)
	}
	if now := sandboxIDs(t, string(after.UID)); len(now) == 0 || now[0] == sandboxes[0] {
		t.Errorf("sandbox not recreated: before %v, now %v", sandboxes, now)
	}
	restarts := int(status(t, after, "c").RestartCount)
	if got := waitLog(t, a, after, "c", restarts, "hostname="); got != "hostname=second" {
		t.Errorf("after the change the container saw %q", got)
	}
}
