package nodeapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func TestPodsHealthzConfigz(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}, Status: v1.PodStatus{Phase: v1.PodRunning}}
	h := openServer(t, podList{pod}, &fakeRuntime{}).Handler()

	rec := get(t, h, "/pods")
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 || list.Kind != "PodList" ||
		len(list.Items) != 1 || list.Items[0].Status.Phase != v1.PodRunning {
		t.Errorf("/pods: %d %s (%v)", rec.Code, rec.Body, err)
	}
	if rec := get(t, h, "/healthz"); rec.Code != 200 || rec.Body.String() != "ok" {
		t.Errorf("/healthz: %d %q", rec.Code, rec.Body)
	}
	rec = get(t, h, "/configz")
	var cz map[string]map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &cz); err != nil || cz["kubeletconfig"]["port"] != float64(10250) {
		t.Errorf("/configz: %s (%v)", rec.Body, err)
	}
	if rec := get(t, h, "/nothing"); rec.Code != http.StatusNotFound {
		t.Errorf("/nothing: %d", rec.Code)
	}
}

func TestRunningPods(t *testing.T) {
	labels := func(name, uid, container string) map[string]string {
		l := map[string]string{runtime.LabelPodName: name, runtime.LabelPodNamespace: "shop", runtime.LabelPodUID: uid}
		if container != "" {
			l[runtime.LabelContainerName] = container
		}
		return l
	}
	running, exited := criv1.ContainerState_CONTAINER_RUNNING, criv1.ContainerState_CONTAINER_EXITED
	rt := &fakeRuntime{
		sandboxes: []*criv1.PodSandbox{
			{Id: "s1", State: criv1.PodSandboxState_SANDBOX_READY, Labels: labels("web", "u1", "")},
			{Id: "s2", State: criv1.PodSandboxState_SANDBOX_NOTREADY, Labels: labels("gone", "u2", "")},
			{Id: "s3", State: criv1.PodSandboxState_SANDBOX_READY, Labels: labels("api", "u3", "")},
		},
		containers: []*criv1.Container{
			{Id: "c1", State: running, Labels: labels("web", "u1", "app"), Metadata: &criv1.ContainerMetadata{Name: "app"}, Image: &criv1.ImageSpec{Image: "busybox:1"}},
			{Id: "c2", State: exited, Labels: labels("web", "u1", "old"), Metadata: &criv1.ContainerMetadata{Name: "old"}},
			{Id: "c3", State: running, Metadata: &criv1.ContainerMetadata{Name: "foreign"}},
		},
	}
	rec := get(t, openServer(t, nil, rt).Handler(), "/runningpods/")
	var list v1.PodList
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || rec.Code != 200 {
		t.Fatalf("%d %s (%v)", rec.Code, rec.Body, err)
	}
	if len(list.Items) != 2 || list.Items[0].Name != "api" || list.Items[1].Name != "web" || list.Items[1].UID != "u1" ||
		len(list.Items[1].Spec.Containers) != 1 || !reflect.DeepEqual(list.Items[1].Spec.Containers[0], v1.Container{Name: "app", Image: "busybox:1"}) {
		t.Errorf("running pods = %+v", list.Items)
	}
}
