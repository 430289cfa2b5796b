package flow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestPodBurstReportsRunning: 30 pods created at once through the API,
// on an agent with low kubeAPIQPS/kubeAPIBurst and event limits, all
// reach Running and Ready in the API. Their statuses go as patches of
// pods/status: the API server counts no PUT of a pod's status meanwhile.
func TestPodBurstReportsRunning(t *testing.T) {
	newAgentConfigured(t, framework.TestInstance, nodeName, cri,
		"kubeAPIQPS: 10\nkubeAPIBurst: 20\neventRecordQPS: 5\neventBurst: 10\n")
	waitSchedulable(t)
	ctx := context.Background()
	putsBefore := statusWrites(t, "PUT")
	patchesBefore := statusWrites(t, "PATCH")

	const n = 30
	labels := map[string]string{"test": "burst"}
	t.Cleanup(func() {
		sel := metav1.ListOptions{LabelSelector: "test=burst"}
		if err := admin.CoreV1().Pods("default").DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
			t.Errorf("delete the pods: %v", err)
		}
		waitFor(t, apiTimeout, "the pods to leave the API", func() (bool, error) {
			pods, err := admin.CoreV1().Pods("default").List(ctx, sel)
			return err == nil && len(pods.Items) == 0, err
		})
	})
	names := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range names {
		names[i] = fmt.Sprintf("burst-%02d", i)
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: "default", Labels: labels},
			Spec: v1.PodSpec{Containers: []v1.Container{{
				Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", sleeper},
			}}},
		}
		wg.Go(func() {
			if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, "every pod Running and Ready in the API", func() (bool, error) {
		pods, err := admin.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "test=burst"})
		if err != nil {
			return false, err
		}
		ready := 0
		for i := range pods.Items {
			if runningPod(&pods.Items[i]) && podReady(&pods.Items[i]) {
				ready++
			}
		}
		return ready == n, fmt.Errorf("%d of %d Running and Ready", ready, n)
	})
	if got := statusWrites(t, "PUT") - putsBefore; got != 0 {
		t.Errorf("%v PUTs of pods/status during the burst, want none (patches only)", got)
	}
	if got := statusWrites(t, "PATCH") - patchesBefore; got < n {
		t.Errorf("%v PATCHes of pods/status for %d pods", got, n)
	}
}

// statusWrites is the API server's count of successful requests with verb
// on pods/status (apiserver_request_total).
func statusWrites(t *testing.T, verb string) float64 {
	t.Helper()
	raw, err := admin.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	var sum float64
	for _, m := range families["apiserver_request_total"].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if labels["verb"] == verb && labels["resource"] == "pods" && labels["subresource"] == "status" && strings.HasPrefix(labels["code"], "2") {
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
