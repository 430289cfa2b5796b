package network

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/test/framework"
)

// diskInstance is the containerd instance of the small-disk node (the disk
// pressure and image GC tests): one of its own, whose data directory
// (root, log, CNI) the tests mount on a small tmpfs, so that the machine's
// disk is never filled.
var diskInstance = framework.NodeInstance(8)

// TestDiskPressureEvictsWriter: on a node whose filesystem (containerd's
// root and the agent's root and log directories on one 256Mi tmpfs) has
// evictionHard nodefs.available<150Mi, a BestEffort pod writing 150Mi into
// a disk emptyDir takes the node into DiskPressure (condition and
// node.kubernetes.io/disk-pressure taint); after reclaiming dead
// containers and unused images does not suffice, the writer (the largest
// user) is evicted with the kubelet's message, the BestEffort neighbour
// stays, and the pressure clears after evictionPressureTransitionPeriod.
func TestDiskPressureEvictsWriter(t *testing.T) {
	n := smallDiskNode(t, func(a *framework.Agent) {
		// Volumes measured every second, not upstream's minute: the
		// ranking must see the writer's emptyDir as it fills.
		if err := a.AppendConfig("evictionPressureTransitionPeriod: 5s\nvolumeStatsAggPeriod: 1s\n"); err != nil {
			t.Fatal(err)
		}
		if err := a.SetEvictionHard(`{nodefs.available: "150Mi"}`); err != nil {
			t.Fatal(err)
		}
	})
	waitFor(t, apiTimeout, "the node to be without DiskPressure", func() (bool, error) {
		pressure := nodeCondition(t, n.name, "DiskPressure")
		return pressure == "False", fmt.Errorf("DiskPressure %q", pressure)
	})

	const emptyDir = "    volumeMounts: [{name: data, mountPath: /data}]\n  volumes: [{name: data, emptyDir: {}}]\n"
	apply(t, podOn("disk-neighbour", n.name, "dd if=/dev/zero of=/data/fill bs=1M count=1; sleep 3600", emptyDir))
	waitFor(t, apiTimeout, "the neighbour to run", func() (bool, error) {
		ph := podField(t, "disk-neighbour", "{.status.phase}")
		return ph == "Running", fmt.Errorf("phase %q", ph)
	})
	apply(t, podOn("disk-writer", n.name, "dd if=/dev/zero of=/data/fill bs=1M count=150; sleep 3600", emptyDir))

	sawPressure, sawTaint := false, false
	waitFor(t, apiTimeout, "the writer to be evicted", func() (bool, error) {
		sawPressure = sawPressure || nodeCondition(t, n.name, "DiskPressure") == "True"
		sawTaint = sawTaint || strings.Contains(nodeTaints(t, n.name), "node.kubernetes.io/disk-pressure:NoSchedule")
		ph := podField(t, "disk-writer", "{.status.phase}")
		return ph == "Failed", fmt.Errorf("phase %q", ph)
	})
	reason, msg := podField(t, "disk-writer", "{.status.reason}"), podField(t, "disk-writer", "{.status.message}")
	const prefix = "The node was low on resource: ephemeral-storage. Threshold quantity: 150Mi, available: "
	if reason != "Evicted" || !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, "Container c was using ") {
		t.Errorf("writer status %q %q", reason, msg)
	}
	waitFor(t, apiTimeout, "DiskPressure and its taint to have been reported, then to clear", func() (bool, error) {
		c, taints := nodeCondition(t, n.name, "DiskPressure"), nodeTaints(t, n.name)
		sawPressure = sawPressure || c == "True"
		sawTaint = sawTaint || strings.Contains(taints, "node.kubernetes.io/disk-pressure:NoSchedule")
		return sawPressure && sawTaint && c == "False" && !strings.Contains(taints, "disk-pressure"),
			fmt.Errorf("DiskPressure %q (seen True: %v), taints %q (seen: %v)", c, sawPressure, taints, sawTaint)
	})
	if ph := podField(t, "disk-neighbour", "{.status.phase}"); ph != "Running" {
		t.Errorf("the neighbour is %q", ph)
	}
}

// diskDataDir is the data directory (root, log, CNI) of hack/containerd.sh
// for diskInstance: smallDiskNode mounts the small filesystem there.
var diskDataDir = "/var/lib/nodeagent-" + diskInstance.Name

// smallDiskNode is a node whose filesystem is one 256Mi tmpfs at
// diskDataDir holding containerd's root and the agent's root and log
// directories, with the agent (configured by before) Ready. Cleanup stops
// the agent and the instance and unmounts the filesystem.
func smallDiskNode(t *testing.T, before func(*framework.Agent)) *node {
	t.Helper()
	inst := diskInstance
	script := filepath.Join(framework.RepoRoot(), "hack", "containerd.sh")
	if err := exec.Command("bash", script, "status", inst.Name).Run(); err == nil {
		t.Fatalf("containerd %s already runs: the small-disk node needs an instance of its own", inst.Name)
	}
	mountSmallDisk(t)
	if _, err := inst.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		out, err := exec.Command("bash", script, "stop", inst.Name, "--purge").CombinedOutput()
		if err != nil {
			t.Errorf("stop %s: %v\n%s", inst.Name, err, out)
		}
	})
	cri, err := inst.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cri.Close() }) // after the agent's cleanup, which lists sandboxes
	n := &node{name: "disk-node", inst: inst, cri: cri}
	agentDir := filepath.Join(diskDataDir, "agent")
	t.Cleanup(func() { _ = os.RemoveAll(agentDir) }) // before the unmount
	startAgentIn(t, n, agentDir, before)
	waitFor(t, apiTimeout, "the node to be Ready", func() (bool, error) {
		ready := nodeCondition(t, n.name, "Ready")
		return ready == "True", fmt.Errorf("Ready %q", ready)
	})
	return n
}

// mountSmallDisk mounts the 256Mi tmpfs at diskDataDir, which must not
// exist, and removes it (and the instance's run directory, when this test
// made it) on cleanup.
func mountSmallDisk(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(diskDataDir); err == nil {
		t.Fatalf("%s exists: the small-disk node mounts its own filesystem there", diskDataDir)
	}
	runDir := "/run/nodeagent-" + diskInstance.Name // the script's config and state
	_, runErr := os.Stat(runDir)
	if err := os.MkdirAll(diskDataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256m,mode=0755", "nodeagent-disk-e2e", diskDataDir).CombinedOutput(); err != nil {
		os.Remove(diskDataDir)
		t.Fatalf("mount tmpfs: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", diskDataDir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v\n%s", diskDataDir, err, out)
			return
		}
		if err := os.Remove(diskDataDir); err != nil {
			t.Error(err)
		}
		if os.IsNotExist(runErr) {
			_ = os.RemoveAll(runDir)
		}
	})
}

// startAgentIn is startAgentOn with the agent's directory at dir (on the
// test's filesystem) and no service proxy.
func startAgentIn(t *testing.T, n *node, dir string, before func(*framework.Agent)) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := cp.NodeKubeconfig(dir, n.name)
	if err != nil {
		t.Fatal(err)
	}
	a, err := framework.NewAgentOn(agentBin, dir, n.inst)
	if err != nil {
		t.Fatal(err)
	}
	a.NodeName = n.name
	a.ExtraArgs = []string{"--kubeconfig", kubeconfig, "--network-plugin=kubenet",
		"--cni-conf-dir", n.inst.CNIConfDir(), "--cni-bin-dir", "/usr/lib/cni", "--cluster-cidr", "10.244.0.0/16"}
	before(a)
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	n.agent = a
	t.Cleanup(func() {
		stopAgent(t, n)
		_, _, _ = kubectl(t, "delete", "node", n.name, "--ignore-not-found")
	})
}

func nodeCondition(t *testing.T, node, typ string) string {
	t.Helper()
	out, _, _ := kubectl(t, "get", "node", node, "-o", fmt.Sprintf(`jsonpath={.status.conditions[?(@.type==%q)].status}`, typ))
	return strings.TrimSpace(out)
}

func nodeTaints(t *testing.T, node string) string {
	t.Helper()
	out, _, _ := kubectl(t, "get", "node", node, "-o", `jsonpath={range .spec.taints[*]}{.key}:{.effect} {end}`)
	return out
}

func podField(t *testing.T, pod, path string) string {
	t.Helper()
	out, _, _ := kubectl(t, "get", "pod", pod, "-n", "default", "-o", "jsonpath="+path)
	return out
}
