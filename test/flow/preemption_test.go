package flow

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// The kubeadm case: on a node full of pods (maxPods: 1), a static pod
// (critical by being static) preempts the API pod running there, as the
// kubelet's critical pod admission handler does: the API pod gets the
// Preempting warning event and is Failed in the API with reason
// Preempting and the DisruptionTarget condition (TerminationByKubelet),
// and the static pod runs, its mirror pod Running.
func TestStaticPodPreemptsAPIPod(t *testing.T) {
	a := newAgentConfigured(t, framework.TestInstance, nodeName, cri, "maxPods: 1\n")
	waitSchedulable(t)
	ctx := context.Background()
	grace := int64(1)
	victim := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "preempt-victim", Namespace: "default"},
		Spec: v1.PodSpec{NodeName: nodeName, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage, Command: []string{"sh", "-c", sleeper}}}},
	}
	created, err := admin.CoreV1().Pods("default").Create(ctx, victim, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/"+victim.Name)
	waitPodRunning(t, victim.Name)

	if err := a.WriteManifest("critical.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: critical, namespace: kube-system}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: %s
    command: ["sh", "-c", %q]
`, framework.BusyboxImage, sleeper)); err != nil {
		t.Fatal(err)
	}
	var st v1.PodStatus
	waitFor(t, apiTimeout, "the API pod to be preempted", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, victim.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		return p.Status.Phase == v1.PodFailed, fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
	})
	if st.Reason != "Preempting" || st.Message != "Preempted in order to admit critical pod" {
		t.Errorf("victim status %s %q", st.Reason, st.Message)
	}
	found := false
	for _, c := range st.Conditions {
		if c.Type == v1.DisruptionTarget {
			found = true
			if c.Status != v1.ConditionTrue || c.Reason != "TerminationByKubelet" || c.Message != "Pod was preempted by Kubelet to accommodate a critical pod." {
				t.Errorf("DisruptionTarget %s %s %q", c.Status, c.Reason, c.Message)
			}
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget condition: %+v", st.Conditions)
	}
	waitFor(t, apiTimeout, "the mirror pod to run", func() (bool, error) {
		p, err := admin.CoreV1().Pods("kube-system").Get(ctx, "critical-"+nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return runningPod(p), fmt.Errorf("phase %s", p.Status.Phase)
	})
	waitFor(t, apiTimeout, "the Preempting event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=" + victim.Name + ",reason=Preempting"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.UID == created.UID && e.Type == v1.EventTypeWarning && e.Message == "Preempted in order to admit critical pod" {
				return true, nil
			}
		}
		return false, fmt.Errorf("%d events: %+v", len(evs.Items), evs.Items)
	})
}
