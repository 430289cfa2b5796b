package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/internal/imagebuild"
	"github.com/nodeagent/nodeagent/pkg/podworker"
	"github.com/nodeagent/nodeagent/pkg/userns"
	"github.com/nodeagent/nodeagent/test/framework"
)

// The PodSpec fields a runtime newer than containerd 1.6 lets the agent
// honour (run them with NODEAGENT_E2E_RUNTIME=containerd2, test/containerd2).
// Each test runs where the runtime has the feature and skips elsewhere; the
// refusal tests in restartrules_test.go check the other side and skip where
// the feature is there.

// runtimeFeatures is what the runtime announces in its CRI Status, read as
// the agent reads it.
func runtimeFeatures(t *testing.T) podworker.RuntimeFeatures {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := cri.Status(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	return podworker.FeaturesFromStatus(resp)
}

// userNamespacesSupported: the runtime's default handler (the one of a pod
// without runtimeClassName) supports user namespaces, the agent's condition
// for hostUsers: false.
func userNamespacesSupported(t *testing.T) bool { return runtimeFeatures(t).UserNamespaces[""] }

// imageVolumesRuntime says whether the runtime mounts CRI image volumes:
// the CRI announces no feature for them, containerd has them from 2.1 on.
// It also returns the runtime's name and version for skip messages.
func imageVolumesRuntime(t *testing.T) (bool, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := cri.Version(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var major, minor int
	_, err = fmt.Sscanf(strings.TrimPrefix(v.RuntimeVersion, "v"), "%d.%d", &major, &minor)
	ok := err == nil && v.RuntimeName == "containerd" && (major > 2 || major == 2 && minor >= 1)
	return ok, v.RuntimeName + " " + v.RuntimeVersion
}

// usernsPod asks for a user namespace; its container writes to an emptyDir.
const usernsPod = `apiVersion: v1
kind: Pod
metadata: {name: userns}
spec:
  hostUsers: false
  terminationGracePeriodSeconds: 2
  volumes: [{name: data, emptyDir: {}}]
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "trap 'exit 0' TERM; echo written > /data/f; while true; do sleep 1; done"]
    volumeMounts: [{name: data, mountPath: /data}]
`

// A pod with hostUsers: false runs in a user namespace of its own: the
// container's root is the first ID of the block the agent allocated and
// recorded for the pod (the kubelet's userns file), never the host's root,
// and an emptyDir (mounted idmapped) is writable by it.
func TestHostUsersFalse(t *testing.T) {
	if !userNamespacesSupported(t) {
		t.Skip("the runtime announces no user namespace support for its default handler (containerd 1.6 announces no handlers): TestHostUsersFalseRefused checks the refusal")
	}
	a := newAgent(t)
	if err := a.WriteManifest("userns.yaml", usernsPod); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("userns", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(a.RootDir, "pods", string(p.UID), userns.MappingsFile))
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		UIDMappings, GIDMappings []struct{ HostID, ContainerID, Length uint32 }
	}
	if err := json.Unmarshal(b, &rec); err != nil || len(rec.UIDMappings) != 1 || len(rec.GIDMappings) != 1 {
		t.Fatalf("the pod's userns record %s: %v", b, err)
	}
	if m := rec.UIDMappings[0]; m.HostID == 0 || m.ContainerID != 0 || m.Length != 65536 {
		t.Errorf("UID mapping %+v, want container 0 to a host block of 65536 IDs other than root's", m)
	}
	for file, m := range map[string]struct{ HostID, ContainerID, Length uint32 }{
		"/proc/self/uid_map": rec.UIDMappings[0], "/proc/self/gid_map": rec.GIDMappings[0]} {
		got := strings.Fields(execIn(t, p, "c", "cat", file))
		if want := []string{"0", strconv.Itoa(int(m.HostID)), strconv.Itoa(int(m.Length))}; !slices.Equal(got, want) {
			t.Errorf("%s in the container: %v, want %v (the recorded mapping)", file, got, want)
		}
	}
	if got := execIn(t, p, "c", "cat", "/data/f"); got != "written\n" {
		t.Errorf("the emptyDir's file holds %q", got)
	}
}

// An image volume (KEP-4639) mounts another image's files read-only while
// the container runs its own image: the volume's image is pulled from the
// registry by the agent, as a container's image.
func TestImageVolume(t *testing.T) {
	if ok, rt := imageVolumesRuntime(t); !ok {
		t.Skipf("%s has no CRI image mounts (containerd has them from 2.1): TestImageVolumeOnOldRuntime checks the failure", rt)
	}
	img, err := imagebuild.FromFiles([]imagebuild.File{{Path: "/data/hello", Content: []byte("from the image volume\n")}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.Push("e2e/imagevolume", "1", img)
	if err != nil {
		t.Fatal(err)
	}
	removeImage(t, ref) // after the agent's cleanup, which removes the pod
	a := newAgent(t)
	if err := a.WriteManifest("imgvol.yaml", imageVolumePod(ref, "{name: img, mountPath: /img}")); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("imgvol", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if got := execIn(t, p, "c", "cat", "/img/data/hello"); got != "from the image volume\n" {
		t.Errorf("/img/data/hello holds %q", got)
	}
	if got := execIn(t, p, "c", "sh", "-c", "if touch /img/data/new 2>/dev/null; then echo writable; else echo read-only; fi"); got != "read-only\n" {
		t.Errorf("the image volume is %s", strings.TrimSpace(got))
	}
}

// imageVolumePod is the pod imgvol: a busybox container with the image
// ref as its volume img, mounted as mounts (volumeMounts entries in YAML's
// flow style) say.
func imageVolumePod(ref, mounts string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: imgvol}
spec:
  terminationGracePeriodSeconds: 2
  volumes: [{name: img, image: {reference: %q, pullPolicy: IfNotPresent}}]
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
    volumeMounts: [%s]
`, ref, framework.BusyboxImage, mounts)
}

// supplementalGroupsPolicy Strict gives the container the pod's
// supplementalGroups and not the groups the image's /etc/group lists for
// the user, which Merge adds. The runtime reports the user it ran (uid,
// gid, groups), which the pod's status shows.
func TestSupplementalGroupsPolicyStrict(t *testing.T) {
	if !runtimeFeatures(t).SupplementalGroupsPolicy {
		t.Skip("the runtime does not announce supplementalGroupsPolicy support (containerd 1.6): TestSupplementalGroupsPolicyStrictRefused checks the rejection")
	}
	ref := pushImageGroupBusybox(t)
	removeImage(t, ref)
	a := newAgent(t)
	for _, policy := range []string{"Strict", "Merge"} {
		name := strings.ToLower(policy)
		if err := a.WriteManifest(name+".yaml", groupsPod(name, policy, ref)); err != nil {
			t.Fatal(err)
		}
	}
	for name, imageGroup := range map[string]bool{"strict": false, "merge": true} {
		p, err := a.WaitPod(name, podTimeout, running)
		if err != nil {
			t.Fatal(err)
		}
		groups := processGroups(t, p)
		if !slices.Contains(groups, 1234) || slices.Contains(groups, 4321) != imageGroup {
			t.Errorf("%s: the container's groups %v: want 1234, and the image's 4321 only with Merge", name, groups)
		}
		u := status(t, p, "c").User
		if u == nil || u.Linux == nil {
			t.Fatalf("%s: no container user in the status", name)
		}
		reported := slices.Sorted(slices.Values(u.Linux.SupplementalGroups))
		if u.Linux.UID != 0 || u.Linux.GID != 0 || !slices.Equal(reported, groups) {
			t.Errorf("%s: status user %+v, want uid 0, gid 0 and the container's groups %v", name, *u.Linux, groups)
		}
	}
}

// groupsPod is a pod with supplementalGroups [1234] under the policy, its
// container from image.
func groupsPod(name, policy, image string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 2
  securityContext: {supplementalGroupsPolicy: %s, supplementalGroups: [1234]}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, policy, image)
}

// pushImageGroupBusybox pushes busybox with an /etc/group that makes root a
// member of group 4321, which only Merge adds.
func pushImageGroupBusybox(t *testing.T) string {
	t.Helper()
	base, err := imagebuild.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	img, err := imagebuild.AppendFiles(base, []imagebuild.File{{Path: "/etc/group",
		Content: []byte("root:x:0:\nnobody:x:65534:\nimagegroup:x:4321:root\n")}})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reg.Push("e2e/imagegroup", "1", img)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// processGroups is the Groups line of the container's main process, sorted.
func processGroups(t *testing.T, p *v1.Pod) []int64 {
	t.Helper()
	for line := range strings.Lines(execIn(t, p, "c", "cat", "/proc/1/status")) {
		rest, ok := strings.CutPrefix(line, "Groups:")
		if !ok {
			continue
		}
		var out []int64
		for _, f := range strings.Fields(rest) {
			g, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatalf("groups %q: %v", rest, err)
			}
			out = append(out, g)
		}
		return slices.Sorted(slices.Values(out))
	}
	t.Fatal("no Groups line in the container's /proc/1/status")
	return nil
}
