package flow

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// crunRoot is where hack/containerd.sh's "crun" handler keeps the test
// instance's container state (its Root option, plus the namespace).
const crunRoot = "/run/nodeagent-test/state/crun/k8s.io"

// TestRuntimeClass: RuntimeClasses applied with kubectl; a pod of a class
// whose handler is crun runs, the runtime reports that handler for its
// sandbox and crun holds its containers, and the class's overhead was set
// on the pod; a pod of a class naming a handler the runtime does not have
// waits in ContainerCreating with the kubelet's FailedCreatePodSandBox
// event, and the agent goes on; a pod naming a missing class is refused.
func TestRuntimeClass(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	classes := writeTemp(t, "classes.yaml", `apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: flow-crun
handler: crun
overhead:
  podFixed:
    cpu: 10m
    memory: 8Mi
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: flow-nosuch
handler: nosuch
`)
	mustKubectl(t, "apply", "-f", classes)
	t.Cleanup(func() { _, _, _ = kubectl(t, "delete", "-f", classes, "--ignore-not-found") })
	out := mustKubectl(t, "get", "runtimeclass", "flow-crun", "flow-nosuch")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		lines = append(lines, strings.Join(f[:min(2, len(f))], " ")+fmt.Sprintf("/%d", len(f)))
	}
	if strings.Join(lines, ";") != "NAME HANDLER/3;flow-crun crun/3;flow-nosuch nosuch/3" {
		t.Errorf("kubectl get runtimeclass:\n%s", out)
	}
	if out := mustKubectl(t, "explain", "runtimeclass.handler"); !strings.HasPrefix(out, "GROUP:      node.k8s.io\nKIND:       RuntimeClass\nVERSION:    v1\n\nFIELD: handler <string>\n") {
		t.Errorf("explain runtimeclass.handler (the OpenAPI document): %q", out)
	}

	pod := func(name, class string) *v1.Pod {
		grace := int64(1)
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: v1.PodSpec{
				RuntimeClassName:              &class,
				TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage,
					Command: []string{"sh", "-c", sleeper}}},
			},
		}
	}
	_, err := admin.CoreV1().Pods("default").Create(ctx, pod("rc-missing", "flow-missing"), metav1.CreateOptions{})
	if want := `pods "rc-missing" is forbidden: pod rejected: RuntimeClass "flow-missing" not found`; err == nil || err.Error() != want {
		t.Errorf("pod of a missing class: %v, want %s", err, want)
	}

	for _, p := range []*v1.Pod{pod("rc-crun", "flow-crun"), pod("rc-nosuch", "flow-nosuch")} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteOnCleanup(t, "pod/"+p.Name)
	}
	running := waitPodRunning(t, "rc-crun")
	if cpu, mem := running.Spec.Overhead[v1.ResourceCPU], running.Spec.Overhead[v1.ResourceMemory]; cpu.String() != "10m" || mem.String() != "8Mi" {
		t.Errorf("overhead of the pod: %v, want the class's", running.Spec.Overhead)
	}
	checkCrunSandbox(t, running)

	const unknown = `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: no runtime for "nosuch" is configured`
	waitPodEvent(t, "rc-nosuch", "FailedCreatePodSandBox", unknown)
	p, err := admin.CoreV1().Pods("default").Get(ctx, "rc-nosuch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Waiting == nil ||
		p.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("pod of an unknown handler: phase %s, containers %+v; want Pending, ContainerCreating", p.Status.Phase, p.Status.ContainerStatuses)
	}
	if n := sandboxesOf(t, string(p.UID)); n != 0 {
		t.Errorf("pod of an unknown handler has %d sandboxes", n)
	}
	// The agent goes on: the crun pod still runs, the node stays Ready.
	waitPodRunning(t, "rc-crun")
	waitSchedulable(t)
}

// checkCrunSandbox: the runtime reports the crun handler for the pod's
// sandbox, and crun (not runc) holds the sandbox and its container.
func checkCrunSandbox(t *testing.T, pod *v1.Pod) {
	t.Helper()
	ctx := context.Background()
	sbs, err := cri.ListPodSandbox(ctx, &criv1.PodSandboxFilter{LabelSelector: map[string]string{nart.LabelPodUID: string(pod.UID)}})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes of %s: %v %v", pod.Name, sbs, err)
	}
	st, err := cri.PodSandboxStatus(ctx, sbs[0].Id, true)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.GetStatus().GetRuntimeHandler(); h != "crun" {
		t.Errorf("sandbox runtime handler %q, want crun", h)
	}
	if info := st.GetInfo()["info"]; !strings.Contains(info, `"runtimeHandler":"crun"`) || !strings.Contains(info, `"binary_name":"/usr/bin/crun"`) {
		t.Errorf("sandbox info lacks the crun handler and binary: %s", info)
	}
	list, err := exec.Command("crun", "--root", crunRoot, "list", "-q").CombinedOutput()
	if err != nil {
		t.Fatalf("crun list: %v\n%s", err, list)
	}
	cid := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	for _, id := range []string{sbs[0].Id, cid} {
		if !strings.Contains(string(list), id) {
			t.Errorf("crun does not hold %s:\n%s", id, list)
		}
	}
}

// waitPodEvent waits for a Warning event of the kubelet on the pod with
// the reason and message.
func waitPodEvent(t *testing.T, name, reason, message string) {
	t.Helper()
	waitFor(t, apiTimeout, name+"'s "+reason+" event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return false, err
		}
		var seen []string
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && e.Message == message && e.Source.Component == "kubelet" {
				return true, nil
			}
			seen = append(seen, e.Type+" "+e.Message)
		}
		return false, fmt.Errorf("events %q", seen)
	})
}
