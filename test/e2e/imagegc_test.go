package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	dto "github.com/prometheus/client_model/go"

	"github.com/nodeagent/nodeagent/internal/imagebuild"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// imageGCInstance is the containerd instance image GC runs against: one of
// its own, never the shared test instance, whose images (busybox, pause,
// what other tests push) a collection would take.
var imageGCInstance = framework.NodeInstance(9)

// gcWait covers the kubelet's ImageGCPeriod (5m): the collection at start
// finds nothing old enough, the next one does.
const gcWait = 7 * time.Minute

// TestImageGCMaximumAge: with imageMaximumGCAge set, the image no
// container uses goes at the first collection after the maximum age, and
// kubelet_image_garbage_collected_total{reason="age"} counts it; the image
// a container uses and the sandbox image stay.
func TestImageGCMaximumAge(t *testing.T) {
	inst := imageGCInstance
	if err := exec.Command("bash", filepath.Join(framework.RepoRoot(), "hack", "containerd.sh"), "status", inst.Name).Run(); err == nil {
		t.Fatalf("containerd %s already runs: image GC needs an instance of its own", inst.Name)
	}
	dataDir := "/var/lib/nodeagent-" + inst.Name // the script's log and CNI directory
	_, statErr := os.Stat(dataDir)
	if _, err := inst.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopPurged(t, inst)
		if os.IsNotExist(statErr) {
			_ = os.RemoveAll(dataDir)
		}
	})
	rt, err := inst.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ref := importOwnImage(t, inst)

	a, err := framework.NewAgentOn(agentBin, t.TempDir(), inst)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.AppendConfig(`imageMinimumGCAge: 1s
imageMaximumGCAge: 2s
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = a.RemoveManifest("busy.yaml")
		_ = a.WaitGone("busy", podTimeout)
		if err := a.Stop(); err != nil {
			t.Errorf("stop agent: %v", err)
		}
		if err := framework.UnmountUnder(a.Dir); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", a.Logs())
		}
	})
	// A host-network pod (the instance's pod network is not set up) keeps
	// busybox in use.
	if err := a.WriteManifest("busy.yaml", `apiVersion: v1
kind: Pod
metadata: {name: busy}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    imagePullPolicy: Never
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("busy", podTimeout, running); err != nil {
		t.Fatal(err)
	}

	deadline := time.Now().Add(gcWait)
	for hasImage(t, rt, ref) {
		if time.Now().After(deadline) {
			t.Fatalf("%s still present after %v", ref, gcWait)
		}
		time.Sleep(2 * time.Second)
	}
	for _, keep := range []string{framework.BusyboxImage, "localhost/nodeagent/pause:3.10"} {
		if !hasImage(t, rt, keep) {
			t.Errorf("%s was removed", keep)
		}
	}
	if n := framework.SampleSum(scrapeMetrics(t, a), "kubelet_image_garbage_collected_total", map[string]string{"reason": "age"}); n != 1 {
		t.Errorf(`kubelet_image_garbage_collected_total{reason="age"} = %v, want 1`, n)
	}
}

// importOwnImage imports a copy of the busybox image with an ID of its
// own (the CRI removes an image with all its tags) under a unique tag.
func importOwnImage(t *testing.T, inst framework.Instance) string {
	t.Helper()
	tag := fmt.Sprintf("localhost/nodeagent/imagegc-e2e:%d", time.Now().UnixNano())
	img, err := imagebuild.Busybox()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = append(cfg.Config.Env, "NODEAGENT_TEST_IMAGE="+tag)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	archive := filepath.Join(t.TempDir(), "image.tar")
	if err := imagebuild.WriteDockerArchive(archive, tag, img); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ctr", "--address", inst.Socket, "-n", "k8s.io", "images", "import", archive).CombinedOutput()
	if err != nil {
		t.Fatalf("import %s: %v\n%s", tag, err, out)
	}
	return tag
}

func hasImage(t *testing.T, rt *nart.Client, ref string) bool {
	t.Helper()
	list, err := rt.ListImages(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, im := range list {
		if slices.Contains(im.GetRepoTags(), ref) {
			return true
		}
	}
	return false
}

// scrapeMetrics reads the node API's /metrics (anonymous, AlwaysAllow).
func scrapeMetrics(t *testing.T, a *framework.Agent) map[string]*dto.MetricFamily {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get("https://" + a.SecureAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s %v\n%s", resp.Status, err, body)
	}
	families, err := framework.ParseMetrics(string(body))
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// stopPurged stops the instance this test started and deletes its data.
func stopPurged(t *testing.T, inst framework.Instance) {
	out, err := exec.Command("bash", filepath.Join(framework.RepoRoot(), "hack", "containerd.sh"), "stop", inst.Name, "--purge").CombinedOutput()
	if err != nil {
		t.Errorf("stop %s: %v\n%s", inst.Name, err, out)
	}
}
