package volume

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func fieldItem(path, field string) v1.DownwardAPIVolumeFile {
	return v1.DownwardAPIVolumeFile{Path: path, FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: field}}
}

func resourceItem(path, container, res, divisor string) v1.DownwardAPIVolumeFile {
	ref := &v1.ResourceFieldSelector{ContainerName: container, Resource: res}
	if divisor != "" {
		ref.Divisor = resource.MustParse(divisor)
	}
	return v1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: ref}
}

func downwardPod() *v1.Pod {
	pod := testPod()
	pod.Labels = map[string]string{"app": "web", "tier": "front"}
	pod.Annotations = map[string]string{"note": `say "hi"`}
	pod.Status.HostIP = "10.0.0.5"
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	return pod
}

func TestDownwardAPIPayload(t *testing.T) {
	in := downwardInputs{
		pod:    downwardPod(),
		podIPs: []string{"10.244.0.7", "fd00::7"},
		allocatable: v1.ResourceList{
			v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi"),
		},
	}
	items := []v1.DownwardAPIVolumeFile{
		fieldItem("name", "metadata.name"),
		fieldItem("namespace", "metadata.namespace"),
		fieldItem("uid", "metadata.uid"),
		fieldItem("labels", "metadata.labels"),
		fieldItem("annotations", "metadata.annotations"),
		fieldItem("tier", "metadata.labels['tier']"),
		fieldItem("node", "spec.nodeName"),
		fieldItem("sa", "spec.serviceAccountName"),
		fieldItem("ip", "status.podIP"),
		fieldItem("ips", "status.podIPs"),
		fieldItem("hostip", "status.hostIP"),
		resourceItem("cpu_req_milli", "app", "requests.cpu", "1m"),
		resourceItem("cpu_req", "app", "requests.cpu", ""),
		resourceItem("mem_limit_mi", "app", "limits.memory", "1Mi"),
		resourceItem("cpu_limit", "app", "limits.cpu", ""),
		resourceItem("dir/mem_req", "app", "requests.memory", ""),
	}
	want := map[string]string{
		"name": "web", "namespace": "ns", "uid": "uid-1",
		"labels":      "app=\"web\"\ntier=\"front\"",
		"annotations": `note="say \"hi\""`,
		"tier":        "front", "node": "node-1", "sa": "default",
		"ip": "10.244.0.7", "ips": "10.244.0.7,fd00::7", "hostip": "10.0.0.5",
		"cpu_req_milli": "250", "cpu_req": "1", // rounded up
		"mem_limit_mi": "128", "cpu_limit": "4", // unset limit: node allocatable
		"dir/mem_req": "67108864",
	}
	payload, err := downwardAPIPayload(items, in, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for path, w := range want {
		if got := string(payload[path].Data); got != w {
			t.Errorf("%s = %q, want %q", path, got, w)
		}
	}
}

// A pod-level limit stands in for the container's unset one.
func TestDownwardAPIPodLevelLimit(t *testing.T) {
	pod := downwardPod()
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}
	in := downwardInputs{pod: pod, allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourceMemory: resource.MustParse("8Gi")}}
	payload, err := downwardAPIPayload([]v1.DownwardAPIVolumeFile{
		resourceItem("cpu_limit", "app", "limits.cpu", ""), resourceItem("mem_limit_mi", "app", "limits.memory", "1Mi"),
	}, in, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"cpu_limit": "2", "mem_limit_mi": "128"} {
		if got := string(payload[path].Data); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
}

func TestDownwardAPIErrorsAggregated(t *testing.T) {
	in := downwardInputs{pod: downwardPod()}
	items := []v1.DownwardAPIVolumeFile{
		fieldItem("bad", "spec.containers"),
		resourceItem("nocontainer", "ghost", "limits.cpu", ""),
		fieldItem("ok", "metadata.name"),
	}
	_, err := downwardAPIPayload(items, in, 0o644)
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"unsupported fieldPath: spec.containers", "container ghost not found"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func TestDownwardAPIPlugin(t *testing.T) {
	e := newTestEnv(t)
	p := newDownwardAPIPlugin(e.host)
	pod := downwardPod()
	pod.Spec.Volumes = []v1.Volume{{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{
		Items: []v1.DownwardAPIVolumeFile{fieldItem("labels", "metadata.labels"), fieldItem("../../x", "metadata.name")},
	}}}}
	c := e.ctx(t, p, pod, "info")
	if _, err := p.SetUp(context.Background(), c); err == nil || !strings.Contains(err.Error(), "must not contain '..'") {
		t.Fatalf("traversal: err %v", err)
	}
	pod.Spec.Volumes[0].DownwardAPI.Items = pod.Spec.Volumes[0].DownwardAPI.Items[:1]
	path, err := p.SetUp(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// Label changes propagate on the next SetUp.
	pod.Labels["tier"] = "back"
	if _, err := p.SetUp(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(path, "labels")); got != "app=\"web\"\ntier=\"back\"" {
		t.Errorf("labels = %q", got)
	}
	if e.mounter.mountCount() != 0 {
		t.Error("downward API volume mounted a tmpfs")
	}
	if err := p.TearDown(path); err != nil || exists(path) {
		t.Errorf("TearDown: %v", err)
	}
}
