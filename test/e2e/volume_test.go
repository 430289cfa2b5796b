package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
	"github.com/nodeagent/nodeagent/test/framework"
)

// Node-local volumes of a static pod: emptyDir on disk and in memory,
// hostPath (created, and checked), downwardAPI, subPath; every one is read
// from inside the container, and the pod's volume directories are gone
// after the pod.
func TestNodeLocalVolumes(t *testing.T) {
	a := newAgent(t)
	host := t.TempDir()
	if err := os.WriteFile(filepath.Join(host, "greeting"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("vols.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: vols
  labels: {app: vols, tier: test}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; echo written > /scratch/f; sleep 3600 & wait"]
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: mem, mountPath: /mem}
    - {name: host, mountPath: /host, readOnly: true}
    - {name: made, mountPath: /made}
    - {name: info, mountPath: /info}
    - {name: host, mountPath: /greeting, subPath: greeting}
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}
  - {name: host, hostPath: {path: %s, type: Directory}}
  - {name: made, hostPath: {path: %s, type: DirectoryOrCreate}}
  - name: info
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: name, fieldRef: {fieldPath: metadata.name}}
`, framework.BusyboxImage, host, filepath.Join(host, "made"))); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("vols", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	for cmd, want := range map[string]string{
		"cat /host/greeting": "hello from the host",
		"cat /greeting":      "hello from the host",
		"cat /info/name":     "vols-e2e-node",
		"cat /info/labels":   "app=\"vols\"\ntier=\"test\"",
		"cat /scratch/f":     "written",
		"awk '$2==\"/mem\"{print $3}' /proc/mounts": "tmpfs",
		"touch /host/x 2>&1 || echo read-only":      "read-only",
	} {
		if got := strings.TrimSpace(execIn(t, p, "c", "sh", "-c", cmd)); !strings.Contains(got, want) {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	if size := strings.TrimSpace(execIn(t, p, "c", "sh", "-c", "df -k /mem | tail -1 | awk '{print $2}'")); size != "16384" {
		t.Errorf("memory emptyDir size %s KiB, want 16384 (sizeLimit 16Mi)", size)
	}
	if fi, err := os.Stat(filepath.Join(host, "made")); err != nil || !fi.IsDir() {
		t.Errorf("DirectoryOrCreate did not create the host directory: %v", err)
	}
	// The emptyDir lives in the agent's root, the kubelet's way.
	dir := volume.VolumeDir(a.RootDir, p.UID, "kubernetes.io/empty-dir", "scratch")
	if b, err := os.ReadFile(filepath.Join(dir, "f")); err != nil || strings.TrimSpace(string(b)) != "written" {
		t.Errorf("emptyDir on the host %s: %q %v", dir, b, err)
	}
	if err := a.RemoveManifest("vols.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitGone("vols", podTimeout); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "the pod's volumes to be removed", func() bool { return gone(volume.PodVolumesDir(a.RootDir, p.UID)) })
	if mountsUnder(t, volume.PodVolumesDir(a.RootDir, p.UID)) {
		t.Errorf("mounts left under the pod's volumes after the pod")
	}
}

// A hostPath whose type check fails keeps the pod from starting (no
// sandbox), with the kubelet's FailedMount message.
func TestHostPathTypeCheckFails(t *testing.T) {
	a := newAgent(t)
	missing := filepath.Join(t.TempDir(), "absent")
	if err := a.WriteManifest("badhost.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: badhost}
spec:
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
    volumeMounts: [{name: h, mountPath: /h}]
  volumes:
  - {name: h, hostPath: {path: %s, type: Directory}}
`, framework.BusyboxImage, missing)); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog(`FailedMount message="MountVolume.SetUp failed for volume \"h\" : hostPath type check failed: `+missing+` is not a directory"`, podTimeout); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("badhost", podTimeout, func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ContainerCreating"
	})
	if err != nil {
		t.Fatal(err)
	}
	// As the kubelet's SyncPod waits for the volumes before the runtime
	// acts: no sandbox while the mount fails.
	if n := sandboxCount(t, string(p.UID)); n != 0 {
		t.Errorf("%d sandboxes for a pod whose volume fails, want none", n)
	}
}

// mountsUnder reports whether anything is mounted below dir.
func mountsUnder(t *testing.T, dir string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			return true
		}
	}
	return false
}

// After an agent restart, the volumes of a running pod are adopted (a
// memory emptyDir keeps its content: it is not mounted again), and the
// volumes of a pod removed while the agent was down are cleaned up.
func TestAgentRestartAdoptsVolumes(t *testing.T) {
	a := newAgent(t)
	manifest := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; echo kept > /mem/f; sleep 3600 & wait"]
    volumeMounts: [{name: mem, mountPath: /mem}]
  volumes:
  - {name: mem, emptyDir: {medium: Memory}}
`, name, framework.BusyboxImage)
	}
	for _, name := range []string{"keep", "drop"} {
		if err := a.WriteManifest(name+".yaml", manifest(name)); err != nil {
			t.Fatal(err)
		}
	}
	keep, err := a.WaitPod("keep", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	drop, err := a.WaitPod("drop", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	hostFile := filepath.Join(volume.VolumeDir(a.RootDir, keep.UID, "kubernetes.io/empty-dir", "mem"), "f")
	waitUntil(t, podTimeout, "the pod's file in its emptyDir", func() bool { _, err := os.Stat(hostFile); return err == nil })
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.RemoveManifest("drop.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, podTimeout, "the removed pod's volumes to go", func() bool { return gone(volume.PodVolumesDir(a.RootDir, drop.UID)) })
	p, err := a.WaitPod("keep", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(execIn(t, p, "c", "cat", "/mem/f")); got != "kept" {
		t.Errorf("memory emptyDir after the restart: %q", got)
	}
	if b, err := os.ReadFile(hostFile); err != nil || strings.TrimSpace(string(b)) != "kept" {
		t.Errorf("the agent remounted the emptyDir on restart: host file %q %v", b, err)
	}
	if n := status(t, p, "c").RestartCount; n != 0 {
		t.Errorf("restarts %d", n)
	}
}

// fsGroup owns writable volumes (group and setgid), so a non-root
// container can write them; subPathExpr expands the container's env.
func TestFSGroupAndSubPathExpr(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("fsg.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: fsg}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 2000}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; touch /data/mine; echo in-sub > /sub/f; sleep 3600 & wait"]
    env: [{name: POD, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
    volumeMounts:
    - {name: data, mountPath: /data}
    - {name: data, mountPath: /sub, subPathExpr: "logs/$(POD)"}
  volumes:
  - {name: data, emptyDir: {}}
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("fsg", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, podTimeout, "the container's files", func() bool {
		return strings.Contains(execIn(t, p, "c", "ls", "/data"), "mine")
	})
	if got := strings.TrimSpace(execIn(t, p, "c", "stat", "-c", "%g %A", "/data")); !strings.HasPrefix(got, "2000 ") || !strings.Contains(got, "s") {
		t.Errorf("/data: %q, want group 2000 with setgid", got)
	}
	if got := strings.TrimSpace(execIn(t, p, "c", "stat", "-c", "%u %g", "/data/mine")); got != "1000 2000" {
		t.Errorf("a file the container made: owner %q, want 1000 2000 (fsGroup inherited)", got)
	}
	host := filepath.Join(volume.VolumeDir(a.RootDir, p.UID, "kubernetes.io/empty-dir", "data"), "logs", "fsg-e2e-node", "f")
	if b, err := os.ReadFile(host); err != nil || strings.TrimSpace(string(b)) != "in-sub" {
		t.Errorf("subPathExpr file on the host %s: %q %v", host, b, err)
	}
}

// A hostPath mounted with HostToContainer propagation shows the container
// a mount made on the host after it started (the source must be a shared
// mount, as systemd hosts make /).
func TestHostToContainerPropagation(t *testing.T) {
	a := newAgent(t)
	host := t.TempDir()
	if err := volume.MakeRShared(host); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := framework.UnmountUnder(host); err != nil {
			t.Error(err)
		}
	})
	if err := os.Mkdir(filepath.Join(host, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("prop.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: prop}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    volumeMounts: [{name: h, mountPath: /h, mountPropagation: HostToContainer}]
  volumes:
  - {name: h, hostPath: {path: %s}}
`, framework.BusyboxImage, host)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("prop", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", filepath.Join(host, "sub"), "tmpfs", 0, "size=1m"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "sub", "late"), []byte("mounted later\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(execIn(t, p, "c", "sh", "-c", "cat /h/sub/late; awk '$2==\"/h/sub\"{print $3}' /proc/mounts")); got != "mounted later\ntmpfs" {
		t.Errorf("in the container: %q, want the host's later tmpfs", got)
	}
}
