package flow

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestPodOSRejectedAtAdmission: pods bound straight to the node (no
// scheduler) whose OS is not the node's fail at the agent's admission, as
// the kubelet's predicate admit handler fails them: phase Failed, its
// reason, "Pod was rejected: " and its message in the status, and a
// Warning event with the reason and the bare message. The node's
// kubernetes.io/os label does not count, the OS the agent runs on does:
// with the label set to windows by the admin, a linux pod still runs.
func TestPodOSRejectedAtAdmission(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	const (
		selectorMsg = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
		fieldMsg    = "Failed to admit pod as the OS field doesn't match node OS"
	)
	pod := func(name string, labels map[string]string, os v1.OSName) *v1.Pod {
		grace := int64(1)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Labels: labels},
			Spec: v1.PodSpec{
				NodeName:                      nodeName,
				TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage,
					Command: []string{"sh", "-c", sleeper}}},
			},
		}
		if os != "" {
			p.Spec.OS = &v1.PodOS{Name: os}
		}
		return p
	}
	create := func(p *v1.Pod) *v1.Pod {
		t.Helper()
		created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		deleteOnCleanup(t, "pod/"+p.Name)
		return created
	}
	rejected := []struct {
		pod         *v1.Pod
		reason, msg string
	}{
		{pod: pod("os-windows", nil, v1.Windows), reason: "PodOSNotSupported", msg: fieldMsg},
		{pod: pod("os-label-windows", map[string]string{v1.LabelOSStable: "windows"}, ""),
			reason: "PodOSSelectorNodeLabelDoesNotMatch", msg: selectorMsg},
	}
	uids := map[string]types.UID{}
	for _, tc := range rejected {
		uids[tc.pod.Name] = create(tc.pod).UID
	}
	for _, tc := range rejected {
		name := tc.pod.Name
		var st v1.PodStatus
		waitFor(t, apiTimeout, name+" to fail", func() (bool, error) {
			p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			st = p.Status
			return p.Status.Phase == v1.PodFailed, fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
		})
		if st.Reason != tc.reason || st.Message != "Pod was rejected: "+tc.msg {
			t.Errorf("%s: status reason %q message %q, want %q %q", name, st.Reason, st.Message, tc.reason, "Pod was rejected: "+tc.msg)
		}
		if len(st.ContainerStatuses) != 0 {
			t.Errorf("%s: container statuses %+v, want none", name, st.ContainerStatuses)
		}
		if n := sandboxesOf(t, string(uids[name])); n != 0 {
			t.Errorf("%s: %d sandboxes, want none", name, n)
		}
		waitFor(t, apiTimeout, name+"'s "+tc.reason+" event", func() (bool, error) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=" + name + ",reason=" + tc.reason})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.UID != uids[name] {
					continue
				}
				if e.Type != v1.EventTypeWarning || e.Message != tc.msg || e.Source.Component != "kubelet" || e.Source.Host != nodeName {
					return false, fmt.Errorf("event %s %q from %+v, want Warning %q from the kubelet on %s", e.Type, e.Message, e.Source, tc.msg, nodeName)
				}
				return true, nil
			}
			return false, fmt.Errorf("%d events, none for the pod", len(evs.Items))
		})
	}

	// The admin labels the node windows: a linux pod is admitted all the same.
	setNodeOSLabel(t, "windows")
	t.Cleanup(func() { setNodeOSLabel(t, "linux") })
	create(pod("os-linux", map[string]string{v1.LabelOSStable: "linux"}, v1.Linux))
	waitPodRunning(t, "os-linux")

	for _, name := range []string{"os-windows", "os-label-windows", "os-linux"} {
		mustKubectl(t, "delete", "pod", name, "--timeout=90s")
		waitPodGone(t, name)
	}
}

// setNodeOSLabel sets the node's kubernetes.io/os label as the admin.
func setNodeOSLabel(t *testing.T, os string) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{v1.LabelOSStable: os}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Nodes().Patch(context.Background(), nodeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Errorf("label node %s=%s: %v", v1.LabelOSStable, os, err)
	}
}
