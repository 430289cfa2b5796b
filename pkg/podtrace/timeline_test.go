package podtrace

import (
	"bytes"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTimelineMergesAPIEventsAndSteps(t *testing.T) {
	pod := testPod("web")
	pod.CreationTimestamp = metav1.NewTime(t0)
	pod.Spec.NodeName = "n1"
	pod.Status.Conditions = []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(time.Second))},
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(3 * time.Second))},
	}
	events := []v1.Event{
		{Reason: "Scheduled", Message: "Successfully assigned ns/web to n1", Source: v1.EventSource{Component: "default-scheduler"},
			FirstTimestamp: metav1.NewTime(t0.Add(time.Second))},
		{Reason: "Started", Message: "Started container c", Source: v1.EventSource{Component: "kubelet"}, FirstTimestamp: metav1.NewTime(t0.Add(2 * time.Second))},
		{Reason: "Custom", ReportingController: "example.com/ctl", EventTime: metav1.NewMicroTime(t0.Add(1500 * time.Millisecond))},
	}
	tr := &Trace{Steps: []Step{
		{Name: StepSeen, Start: t0.Add(1200 * time.Millisecond), End: t0.Add(1200 * time.Millisecond)},
		{Name: StepSandbox, Start: t0.Add(1300 * time.Millisecond), End: t0.Add(1900 * time.Millisecond), Detail: "sandbox x"},
		{Name: StepStart, Container: "c", Start: t0.Add(2 * time.Second), End: t0.Add(2100 * time.Millisecond), Error: "boom"},
	}}
	lines := Timeline(pod, events, tr)
	var got []string
	for _, l := range lines {
		got = append(got, l.Component+" "+l.Step)
	}
	want := []string{
		"kube-apiserver Created", "kube-apiserver PodScheduled", "default-scheduler Event Scheduled",
		"nodeagent Seen", "nodeagent RunPodSandbox", "example.com/ctl Event Custom", "nodeagent StartContainer c",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("lines\n%v\nwant\n%v", got, want)
	}
	if l := lines[4]; l.Offset != 1300*time.Millisecond || l.Duration != 600*time.Millisecond || l.Coarse {
		t.Errorf("sandbox line %+v", l)
	}
	if l := lines[1]; !l.Coarse || l.Duration != -1 {
		t.Errorf("API line %+v: want coarse with no duration", l)
	}
	if l := lines[6]; l.Detail != "error: boom" {
		t.Errorf("failed step detail %q", l.Detail)
	}
	var b bytes.Buffer
	if err := Format(&b, pod, lines, tr); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"~+1s", "+1.300s", "600ms", "RunPodSandbox", "pod ns/web (uid uid-web) on node \"n1\""} {
		if !strings.Contains(b.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, b.String())
		}
	}
}

func TestTimelineWithoutTraceShowsTheAgentsEvents(t *testing.T) {
	pod := testPod("web")
	pod.CreationTimestamp = metav1.NewTime(t0)
	events := []v1.Event{{Reason: "Started", Source: v1.EventSource{Component: "kubelet"}, FirstTimestamp: metav1.NewTime(t0.Add(2 * time.Second))}}
	lines := Timeline(pod, events, nil)
	if len(lines) != 2 || lines[1].Step != "Event Started" || lines[1].Offset != 2*time.Second {
		t.Errorf("lines %+v", lines)
	}
}
