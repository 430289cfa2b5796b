package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/test/framework"
)

const watchedConfigPod = `apiVersion: v1
kind: Pod
metadata: {name: watched}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    volumeMounts:
    - {name: config, mountPath: /config}
  volumes:
  - name: config
    configMap: {name: watched-config}
`

// configMapGets is how many GETs of single config maps the API server
// answered.
func configMapGets(t *testing.T) float64 {
	t.Helper()
	families, err := framework.APIServerMetrics(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	return gets(families)
}

func gets(families map[string]*dto.MetricFamily) float64 {
	return framework.SampleSum(families, "apiserver_request_total", map[string]string{"verb": "GET", "resource": "configmaps", "scope": "resource"})
}

// TestConfigMapChangeReachesVolumeThroughWatch: with the default
// configMapAndSecretChangeDetectionStrategy (Watch), a change of a config
// map a running pod mounts reaches the file inside its container, and the
// agent asked the API server for no config map with a GET meanwhile: not
// for the volume, nor for the service account volume's kube-root-ca.crt,
// at the pod's start or at the syncs that refreshed the volume. Only the
// agent GETs config maps in this suite (the controllers read listers, the
// test creates and patches).
func TestConfigMapChangeReachesVolumeThroughWatch(t *testing.T) {
	newAgent(t) // syncFrequency 10s: the refreshes come soon
	waitSchedulable(t)
	ctx := context.Background()
	cms := admin.CoreV1().ConfigMaps("default")
	t.Cleanup(func() { _ = cms.Delete(ctx, "watched-config", metav1.DeleteOptions{}) })
	deleteOnCleanup(t, "pod/watched")
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched-config"},
		Data: map[string]string{"greeting": "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := configMapGets(t)
	mustKubectl(t, "apply", "-f", writeTemp(t, "watched.yaml", watchedConfigPod))
	pod := waitPodRunning(t, "watched")
	id := pod.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	greeting := func() (string, error) {
		res, err := cri.ExecSync(ctx, id, []string{"cat", "/config/greeting"}, 10*time.Second)
		if err != nil {
			return "", err
		}
		return string(res.Stdout), nil
	}
	if got, err := greeting(); err != nil || got != "one" {
		t.Fatalf("greeting at start: %q %v", got, err)
	}
	if _, err := cms.Patch(ctx, "watched-config", types.MergePatchType, []byte(`{"data":{"greeting":"two"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, "the change in the container", func() (bool, error) {
		got, err := greeting()
		return got == "two", fmt.Errorf("greeting %q: %v", got, err)
	})
	if n := configMapGets(t) - before; n != 0 {
		t.Errorf("%v GETs of config maps while the pod started and its volume was refreshed, want none (the watches answer)", n)
	}
}
