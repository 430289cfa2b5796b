package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeagent/nodeagent/pkg/diagnose"
)

func TestWhyPodName(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		err  bool
	}{
		{args: []string{"pod", "web"}, want: "web"},
		{args: []string{"pods", "web"}, want: "web"},
		{args: []string{"po/web"}, want: "web"},
		{args: []string{"pod"}, err: true},
		{args: []string{"deployment", "web"}, err: true},
		{args: []string{"web"}, err: true},
	} {
		got, err := whyPodName(tc.args)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("whyPodName(%q) = %q, %v; want %q, error %v", tc.args, got, err, tc.want, tc.err)
		}
	}
}

// TestReadWhyInput: the pod, its node, its claims (a missing one left
// out), and the previous log of each restarted container are read.
func TestReadWhyInput(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1"},
		Spec: v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "app"}, {Name: "side"}}, Volumes: []v1.Volume{
			{Name: "a", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "b", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "gone"}}},
		}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}},
			{Name: "side"},
		}},
	}
	client := fake.NewClientset(pod,
		&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}},
		&v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "ns"}},
		&v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: "ns"}, Reason: "BackOff",
			InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: "web", UID: "u1"}})
	var warn bytes.Buffer
	in, err := readWhyInput(context.Background(), client, "ns", "web", &warn)
	if err != nil {
		t.Fatal(err)
	}
	if in.Pod.UID != "u1" || in.Node == nil || in.Node.Name != "n1" {
		t.Errorf("pod %v node %v", in.Pod.UID, in.Node)
	}
	if _, ok := in.Claims["data"]; !ok || len(in.Claims) != 1 {
		t.Errorf("claims %v, want data only (gone does not exist)", in.Claims)
	}
	if len(in.Events) == 0 || in.Events[0].Reason != "BackOff" {
		t.Errorf("events %+v", in.Events)
	}
	// The fake clientset answers every log request with "fake logs".
	if got := in.PreviousLogs["app"]; !slices.Equal(got, []string{"fake logs"}) || len(in.PreviousLogs) != 1 {
		t.Errorf("previous logs %q, want app's only", in.PreviousLogs)
	}
	if warn.Len() != 0 {
		t.Errorf("warnings: %s", warn.String())
	}
	if p := diagnose.Diagnose(in).Paragraph(); !strings.HasPrefix(p, "Pod ns/web ") {
		t.Errorf("paragraph %q", p)
	}
	if _, err := readWhyInput(context.Background(), client, "ns", "missing", &warn); err == nil || !strings.Contains(err.Error(), `get pod ns/missing`) {
		t.Errorf("missing pod: %v", err)
	}
}
