package network

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/internal/imagebuild"
	"github.com/nodeagent/nodeagent/pkg/imagegc"
	"github.com/nodeagent/nodeagent/test/framework"
)

// The image GC test's thresholds: a band of 2% of the 256Mi filesystem
// (5.1Mi), narrower than any of its images, so that how much a collection
// must free is set by the test's ballast, not by the band.
const (
	gcHigh, gcLow = 52, 50
	mib           = int64(1) << 20
	// gcPlanLog is what the agent logs (at -v=4) once per collection.
	gcPlanLog = `msg="image garbage collection plan"`
)

// gcImage is one of the test's images: busybox and a layer of dataMiB of
// random bytes (which no compression shrinks); id and size are the
// runtime's.
type gcImage struct {
	ref     string
	dataMiB int64
	id      string
	size    int64
}

// TestImageGCFreesSpaceOnSmallFilesystem: on the small-disk node, four
// images of distinct sizes used by pods one after the other (a, b, c, d:
// least recently used first) and a ballast file that takes the image
// filesystem past imageGCHighThresholdPercent. Each collection removes the
// least recently used images until the use is under
// imageGCLowThresholdPercent and no more: a alone, then b and c with d
// kept; then, with more to free than d holds, d goes and the kubelet's
// FreeDiskSpaceFailed warning is recorded on the Node. The sandbox image
// and the image of a running pod are never removed, and
// kubelet_image_garbage_collected_total{reason="space"} counts each removal.
func TestImageGCFreesSpaceOnSmallFilesystem(t *testing.T) {
	images := []*gcImage{
		{ref: "localhost/nodeagent/gc-a:1", dataMiB: 16}, {ref: "localhost/nodeagent/gc-b:1", dataMiB: 8},
		{ref: "localhost/nodeagent/gc-c:1", dataMiB: 10}, {ref: "localhost/nodeagent/gc-d:1", dataMiB: 12},
	}
	archives := writeGCImages(t, images)
	n := smallDiskNode(t, func(a *framework.Agent) {
		importArchives(t, a.Instance(), archives)
		if err := a.SetImageGCThresholds(gcHigh, gcLow); err != nil {
			t.Fatal(err)
		}
		if err := a.AppendConfig("imageMinimumGCAge: 1s\n"); err != nil {
			t.Fatal(err)
		}
		a.ExtraArgs = append(a.ExtraArgs, "--image-gc-period=2s", "-v=4")
	})
	readImages(t, n, images)
	kept := keptImages(t, n)
	apply(t, podOn("gc-keep", n.name, "sleep 3600", "")) // busybox, in use throughout
	waitPodIP(t, "gc-keep")
	for _, im := range images {
		useImage(t, n, im)
	}
	ballast := newBallast(t)
	band := diskCapacity(t) * (gcHigh - gcLow) / 100 // the least a collection frees

	a, b, c, d := images[0], images[1], images[2], images[3]
	fillToFree(t, ballast, midpoint(t, band, a.size))
	expectRemoved(t, n, images, 1)
	fillToFree(t, ballast, midpoint(t, max(band, b.size), b.size+c.size))
	expectRemoved(t, n, images, 3)
	if msgs := shortfallEvents(t, n); len(msgs) != 0 {
		t.Errorf("FreeDiskSpaceFailed while enough could be freed: %q", msgs)
	}

	fillToFree(t, ballast, max(band, d.size)+8*mib)
	waitShortfall(t, n, d.size)
	waitGone(t, n, d)
	if got := imageGCCount(t, n); got != 4 {
		t.Errorf(`kubelet_image_garbage_collected_total{reason="space"} = %v, want 4`, got)
	}
	for _, ref := range kept {
		if !hasImageRef(t, n, ref) {
			t.Errorf("%s was removed", ref)
		}
	}
	if ph := podField(t, "gc-keep", "{.status.phase}"); ph != "Running" {
		t.Errorf("gc-keep is %q", ph)
	}
}

// writeGCImages writes each image as a docker archive.
func writeGCImages(t *testing.T, images []*gcImage) []string {
	t.Helper()
	base, err := imagebuild.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for i, im := range images {
		data := make([]byte, im.dataMiB*mib)
		_, _ = rand.NewChaCha8([32]byte{byte(i + 1)}).Read(data)
		img, err := imagebuild.AppendFiles(base, []imagebuild.File{{Path: "/gc-data", Content: data}})
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), fmt.Sprintf("gc-%d.tar", i))
		if err := imagebuild.WriteDockerArchive(p, im.ref, img); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

func importArchives(t *testing.T, inst framework.Instance, archives []string) {
	t.Helper()
	for _, p := range archives {
		out, err := exec.Command("ctr", "--address", inst.Socket, "-n", "k8s.io", "images", "import", p).CombinedOutput()
		if err != nil {
			t.Fatalf("import %s: %v\n%s", p, err, out)
		}
	}
}

// readImages fills in the runtime's ID and size of each image; the sizes
// are what image GC counts as freed.
func readImages(t *testing.T, n *node, images []*gcImage) {
	t.Helper()
	list, err := n.cri.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range images {
		for _, l := range list {
			if slices.Contains(l.GetRepoTags(), im.ref) {
				im.id, im.size = l.GetId(), int64(l.GetSize())
			}
		}
		if im.size < im.dataMiB*mib {
			t.Fatalf("%s: size %d (ID %q), want at least its %dMi layer", im.ref, im.size, im.id, im.dataMiB)
		}
	}
}

// keptImages are the sandbox image and the busybox image of the pod that
// runs throughout: image GC must never remove them.
func keptImages(t *testing.T, n *node) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	sandbox, err := imagegc.SandboxImage(ctx, n.cri)
	if err != nil || sandbox == "" {
		t.Fatalf("the runtime's sandbox image: %q, %v", sandbox, err)
	}
	kept := []string{sandbox, framework.BusyboxImage}
	for _, ref := range kept {
		if !hasImageRef(t, n, ref) {
			t.Fatalf("%s is not on the node", ref)
		}
	}
	return kept
}

// useImage runs a pod on im until a collection has seen it in use, then
// deletes it and waits for its container to go: the next image used is
// used more recently.
func useImage(t *testing.T, n *node, im *gcImage) {
	t.Helper()
	name := "gc-use-" + strings.TrimSuffix(strings.TrimPrefix(im.ref, "localhost/nodeagent/gc-"), ":1")
	apply(t, strings.Replace(podOn(name, n.name, "sleep 3600", ""), framework.BusyboxImage, im.ref, 1))
	waitPodIP(t, name)
	gcPasses(t, n, 2)
	mustKubectl(t, "delete", "pod", name, "-n", "default", "--wait=true", "--timeout=90s")
	filter := &criv1.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.name": name}}
	waitFor(t, apiTimeout, name+"'s containers to be removed", func() (bool, error) {
		cs, err := n.cri.ListContainers(context.Background(), filter)
		return err == nil && len(cs) == 0, fmt.Errorf("%d containers, %v", len(cs), err)
	})
}

// gcPasses waits for k more collections by n's agent; of two, the second
// began after the call.
func gcPasses(t *testing.T, n *node, k int) {
	t.Helper()
	count := func() int { return strings.Count(n.agent.Logs(), gcPlanLog) }
	from := count()
	waitFor(t, apiTimeout, fmt.Sprintf("%d image collections", k), func() (bool, error) {
		c := count() - from
		return c >= k, fmt.Errorf("%d so far", c)
	})
}

// newBallast is a file on the small filesystem that fillToFree grows.
func newBallast(t *testing.T) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(diskDataDir, "gc-ballast"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		f.Close()
		if err := os.Remove(f.Name()); err != nil {
			t.Error(err)
		}
	})
	return f
}

// fillToFree grows the ballast at once (fallocate: a collection sees it
// whole or not at all) until image GC must free amount bytes to reach the
// low threshold: the kubelet's capacity*(100-low)/100 - available.
func fillToFree(t *testing.T, ballast *os.File, amount int64) {
	t.Helper()
	capacity, available := diskStat(t)
	grow := available - (capacity*(100-gcLow)/100 - amount)
	if grow <= 0 {
		t.Fatalf("the filesystem is already past the use to test (%d of %d bytes free, %d to free)", available, capacity, amount)
	}
	st, err := ballast.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Fallocate(int(ballast.Fd()), 0, st.Size(), grow); err != nil {
		t.Fatalf("fallocate %d bytes: %v", grow, err)
	}
}

// expectRemoved: images[:k] go (the least recently used), the use ends
// under the low threshold, and a later collection leaves images[k:]. The
// disk frees more than the sizes the collection counts (the runtime's
// sizes are its blobs; the unpacked layers go too), so the use measured
// ends under the threshold the collection aimed at.
func expectRemoved(t *testing.T, n *node, images []*gcImage, k int) {
	t.Helper()
	for _, im := range images[:k] {
		waitGone(t, n, im)
	}
	gcPasses(t, n, 2)
	for _, im := range images[k:] {
		if !hasImageRef(t, n, im.ref) {
			t.Errorf("%s was removed too, though the first %d images freed enough", im.ref, k)
		}
	}
	if got := imageGCCount(t, n); got != float64(k) {
		t.Errorf(`kubelet_image_garbage_collected_total{reason="space"} = %v, want %d`, got, k)
	}
	if capacity, available := diskStat(t); available < capacity*(100-gcLow)/100 {
		t.Errorf("%d of %d bytes free: over the low threshold %d%%", available, capacity, gcLow)
	}
}

func waitGone(t *testing.T, n *node, im *gcImage) {
	t.Helper()
	waitFor(t, apiTimeout, im.ref+" to be removed", func() (bool, error) {
		return !hasImageRef(t, n, im.ref), fmt.Errorf("still there")
	})
}

// waitShortfall waits for upstream's FreeDiskSpaceFailed warning on the
// Node, for a collection that freed freed bytes at a use of at least the
// high threshold.
func waitShortfall(t *testing.T, n *node, freed int64) {
	t.Helper()
	re := regexp.MustCompile(`^Insufficient free disk space on the node's image filesystem \((\d+)% of 256\.0 MiB used\)\. ` +
		`Failed to free sufficient space by deleting unused images \(freed ` + strconv.FormatInt(freed, 10) + ` bytes\)\. ` +
		`Investigate disk usage, as it could be used by active images, logs, volumes, or other data\.$`)
	waitFor(t, apiTimeout, "a FreeDiskSpaceFailed event", func() (bool, error) {
		msgs := shortfallEvents(t, n)
		for _, m := range msgs {
			if s := re.FindStringSubmatch(m); s != nil {
				pct, _ := strconv.Atoi(s[1])
				return pct >= gcHigh, fmt.Errorf("%d%% used, under the high threshold", pct)
			}
		}
		return false, fmt.Errorf("events %q", msgs)
	})
}

// shortfallEvents are the messages of the FreeDiskSpaceFailed warnings on
// n's Node.
func shortfallEvents(t *testing.T, n *node) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := cp.Admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range list.Items {
		o := e.InvolvedObject
		if e.Reason == imagegc.EventFreeDiskSpaceFailed && e.Type == "Warning" && o.Kind == "Node" && o.Name == n.name {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

// imageGCCount is kubelet_image_garbage_collected_total{reason="space"}
// from the agent's /metrics (through the API server's node proxy).
func imageGCCount(t *testing.T, n *node) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := cp.Admin.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", n.name, "proxy/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("the agent's /metrics: %v", err)
	}
	families, err := framework.ParseMetrics(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	return framework.SampleSum(families, "kubelet_image_garbage_collected_total", map[string]string{"reason": imagegc.ReasonSpace})
}

func hasImageRef(t *testing.T, n *node, ref string) bool {
	t.Helper()
	list, err := n.cri.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(list, func(im *criv1.Image) bool { return slices.Contains(im.GetRepoTags(), ref) })
}

// diskStat is the small filesystem's capacity and available bytes, as
// the agent's statfs reads them.
func diskStat(t *testing.T) (capacity, available int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(diskDataDir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Blocks) * st.Bsize, int64(st.Bavail) * st.Bsize
}

func diskCapacity(t *testing.T) int64 {
	t.Helper()
	capacity, _ := diskStat(t)
	return capacity
}

// midpoint is the middle of (lo, hi]: the amount to free that only the
// intended removals satisfy, with room either side for what else the node
// writes meanwhile.
func midpoint(t *testing.T, lo, hi int64) int64 {
	t.Helper()
	if hi-lo < 4*mib {
		t.Fatalf("window (%d, %d] too narrow for the node's own writes", lo, hi)
	}
	return (lo + hi) / 2
}
