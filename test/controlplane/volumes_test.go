package controlplane_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// table parses kubectl's table output into one map per row, keyed by
// header, cutting each line at the header's column offsets: cells may be
// empty (STORAGECLASS, REASON), which splitting on spaces cannot handle.
func table(out string) []map[string]string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	starts := regexp.MustCompile(`\S+( \S+)*`).FindAllStringIndex(lines[0], -1)
	var rowsOut []map[string]string
	for _, line := range lines[1:] {
		row := map[string]string{}
		for i, s := range starts {
			end := len(line)
			if i+1 < len(starts) && starts[i+1][0] < end {
				end = starts[i+1][0]
			}
			cell := ""
			if s[0] < end {
				cell = strings.TrimSpace(line[s[0]:end])
			}
			row[lines[0][s[0]:s[1]]] = cell
		}
		rowsOut = append(rowsOut, row)
	}
	return rowsOut
}

// headers lists the column names of kubectl's table output.
func headers(out string) []string {
	first, _, _ := strings.Cut(out, "\n")
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(first), -1)
}

// waitKubectl polls kubectl until ok accepts its output.
func waitKubectl(t *testing.T, what string, ok func(out string) bool, args ...string) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, err := kubectl(t, args...)
		if err == nil && ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last output %q (err %v)", what, out, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func volumeManifest(name, class, source string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata:
  name: %s
spec:
  capacity:
    storage: 1Gi
  accessModes: [ReadWriteOnce]
  storageClassName: %s
%s`, name, class, source)
}

func claimManifest(name, class string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: %s
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: %s
  resources:
    requests:
      storage: 500Mi
`, name, class)
}

func TestPersistentVolumeDiscovery(t *testing.T) {
	resources := rows(mustKubectl(t, "api-resources"))
	for _, want := range [][]string{
		{"persistentvolumeclaims", "pvc", "v1", "true", "PersistentVolumeClaim"},
		{"persistentvolumes", "pv", "v1", "false", "PersistentVolume"},
		{"storageclasses", "sc", "storage.k8s.io/v1", "false", "StorageClass"},
	} {
		if !slices.ContainsFunc(resources, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("api-resources lacks %q", want)
		}
	}
	out := mustKubectl(t, "explain", "pv.spec.claimRef")
	if want := "KIND:       PersistentVolume\nVERSION:    v1\n\nFIELD: claimRef <ObjectReference>\n"; !strings.HasPrefix(out, want) {
		t.Errorf("explain pv.spec.claimRef: got %q", out)
	}
	out = mustKubectl(t, "explain", "pvc.spec")
	for _, s := range []string{"KIND:       PersistentVolumeClaim\n", "\n  volumeName\t<string>\n", "\n  accessModes\t<[]string>\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("explain pvc.spec lacks %q", s)
		}
	}
}

// TestPersistentVolumeBinding: a hostPath volume and a claim created with
// kubectl bind; deleting the claim releases the volume (Retain).
func TestPersistentVolumeBinding(t *testing.T) {
	ns := namespace(t)
	const pv, class = "e2e-pv-hostpath", "e2e-manual"
	t.Cleanup(func() { _, _, _ = kubectl(t, "delete", "pv", pv, "--ignore-not-found") })
	mustKubectl(t, "apply", "-f", writeFile(t, "pv.yaml", volumeManifest(pv, class, "  hostPath:\n    path: /tmp/"+pv+"\n")))
	mustKubectl(t, "-n", ns, "apply", "-f", writeFile(t, "pvc.yaml", claimManifest("data", class)))

	out := waitKubectl(t, "claim bound", func(out string) bool { return strings.Contains(out, "Bound") }, "-n", ns, "get", "pvc", "data")
	if got, want := headers(out), []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE"}; !slices.Equal(got, want) {
		t.Errorf("get pvc header: %q", got)
	}
	checkRow(t, "get pvc", rows(out)[1], []string{"data", "Bound", pv, "1Gi", "RWO", class, "<unset>", "*"})

	out = waitKubectl(t, "volume bound", func(out string) bool { return strings.Contains(out, "Bound") }, "get", "pv", pv)
	if got, want := headers(out), []string{"NAME", "CAPACITY", "ACCESS MODES", "RECLAIM POLICY", "STATUS", "CLAIM", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE"}; !slices.Equal(got, want) {
		t.Errorf("get pv header: %q", got)
	}
	row := table(out)[0]
	for col, want := range map[string]string{"NAME": pv, "CAPACITY": "1Gi", "ACCESS MODES": "RWO", "RECLAIM POLICY": "Retain",
		"STATUS": "Bound", "CLAIM": ns + "/data", "STORAGECLASS": class, "VOLUMEATTRIBUTESCLASS": "<unset>", "REASON": ""} {
		if row[col] != want {
			t.Errorf("get pv %s: got %q, want %q", col, row[col], want)
		}
	}
	if got := mustKubectl(t, "-n", ns, "get", "pvc", "data", "-o", "jsonpath={.metadata.annotations}"); !strings.Contains(got, `"pv.kubernetes.io/bind-completed":"yes"`) ||
		!strings.Contains(got, `"pv.kubernetes.io/bound-by-controller":"yes"`) {
		t.Errorf("claim annotations: %s", got)
	}

	if out := mustKubectl(t, "-n", ns, "delete", "pvc", "data"); out != `persistentvolumeclaim "data" deleted from `+ns+" namespace\n" {
		t.Errorf("delete pvc: %q", out)
	}
	waitKubectl(t, "volume released", func(out string) bool {
		r := table(out)
		return len(r) == 1 && r[0]["STATUS"] == "Released" && r[0]["CLAIM"] == ns+"/data"
	}, "get", "pv", pv)
}

// readyNodeManifest is a schedulable Ready Node no agent runs for; its
// heartbeat is now, so the node lifecycle controller leaves it Ready for
// its grace period (40 s), longer than the test needs.
func readyNodeManifest(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Node
metadata:
  name: %s
  labels:
    kubernetes.io/hostname: %s
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
  allocatable: {cpu: "4", memory: 8Gi, pods: "110"}
  conditions:
  - type: Ready
    status: "True"
    reason: KubeletReady
    message: test node
    lastHeartbeatTime: %s
`, name, name, time.Now().UTC().Format(time.RFC3339))
}

// TestLocalVolumeNodeAffinity: a pod using a claim bound to a local
// volume with node affinity to node "a" is scheduled to "a", not "b".
func TestLocalVolumeNodeAffinity(t *testing.T) {
	ns := namespace(t)
	const pv, class = "e2e-pv-local-a", "e2e-local"
	t.Cleanup(func() {
		_, _, _ = kubectl(t, "-n", ns, "delete", "pod", "user", "--force", "--grace-period=0", "--ignore-not-found")
		_, _, _ = kubectl(t, "-n", ns, "delete", "pvc", "near", "--ignore-not-found")
		_, _, _ = kubectl(t, "delete", "pv", pv, "--ignore-not-found")
		_, _, _ = kubectl(t, "delete", "node", "a", "b", "--ignore-not-found")
	})
	for _, node := range []string{"a", "b"} {
		mustKubectl(t, "create", "-f", writeFile(t, node+".yaml", readyNodeManifest(node)))
	}
	local := "  local:\n    path: /mnt/disk1\n  nodeAffinity:\n    required:\n      nodeSelectorTerms:\n" +
		"      - matchExpressions:\n        - {key: kubernetes.io/hostname, operator: In, values: [a]}\n"
	mustKubectl(t, "create", "-f", writeFile(t, "pv.yaml", volumeManifest(pv, class, local)))
	mustKubectl(t, "-n", ns, "create", "-f", writeFile(t, "pvc.yaml", claimManifest("near", class)))
	waitKubectl(t, "claim bound", func(out string) bool { return out == pv }, "-n", ns, "get", "pvc", "near", "-o", "jsonpath={.spec.volumeName}")

	mustKubectl(t, "-n", ns, "create", "-f", writeFile(t, "pod.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: user
spec:
  containers:
  - name: c
    image: busybox:1
  volumes:
  - name: data
    persistentVolumeClaim:
      claimName: near
`))
	t.Cleanup(func() {
		if t.Failed() {
			_, _, _ = kubectl(t, "-n", ns, "get", "pod", "user", "-o", "jsonpath={.status.conditions}")
			_, _, _ = kubectl(t, "get", "nodes", "-o", "wide")
			_, _, _ = kubectl(t, "-n", ns, "get", "events")
		}
	})
	waitKubectl(t, "pod scheduled to a", func(out string) bool { return out == "a" }, "-n", ns, "get", "pod", "user", "-o", "jsonpath={.spec.nodeName}")
}
