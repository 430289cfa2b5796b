package flow

import (
	"context"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// A pod created through the API with restartPolicy Never and a container
// restarted on exit code 42 only (KEP-5307): scheduled, run, restarted for
// 42 and done for 0, its status (restart count, phase) written back to the
// API. A hostUsers: false pod next to it gets the kubelet's sandbox
// refusal as an event and stays Pending.
func TestRestartRulesThroughAPI(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	grace := int64(1)
	never := v1.ContainerRestartPolicyNever
	rules := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "rules", Namespace: "default"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Volumes:                       []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
			Containers: []v1.Container{{
				Name: "main", Image: framework.BusyboxImage,
				// exits 42 on its first run, 0 on its second
				Command:       []string{"sh", "-c", "if [ -e /d/ran ]; then exit 0; fi; touch /d/ran; exit 42"},
				VolumeMounts:  []v1.VolumeMount{{Name: "d", MountPath: "/d"}},
				RestartPolicy: &never,
				RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
					ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}},
			}},
		},
	}
	hostUsers := false
	userns := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "userns", Namespace: "default"},
		Spec: v1.PodSpec{
			HostUsers: &hostUsers, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage, Command: []string{"sh", "-c", sleeper}}},
		},
	}
	for _, p := range []*v1.Pod{rules, userns} {
		if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteOnCleanup(t, "pod/"+p.Name)
	}
	var st v1.PodStatus
	waitFor(t, apiTimeout, "rules to succeed", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "rules", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st = p.Status
		return st.Phase == v1.PodSucceeded, fmt.Errorf("phase %s, containers %+v", st.Phase, st.ContainerStatuses)
	})
	if cs := st.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 1 || cs[0].State.Terminated == nil || cs[0].State.Terminated.ExitCode != 0 {
		t.Errorf("rules container statuses %+v, want terminated with 0 after one restart", cs)
	}

	const msg = "Failed to create pod sandbox: can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	waitFor(t, apiTimeout, "userns's FailedCreatePodSandBox event", func() (bool, error) {
		evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.name=userns,reason=FailedCreatePodSandBox"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == v1.EventTypeWarning && e.Message == msg && e.Source.Component == "kubelet" {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %+v", evs.Items)
	})
	p, err := admin.CoreV1().Pods("default").Get(ctx, "userns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending || sandboxesOf(t, string(p.UID)) != 0 {
		t.Errorf("userns: phase %s with %d sandboxes, want Pending with none", p.Status.Phase, sandboxesOf(t, string(p.UID)))
	}
	for _, name := range []string{"rules", "userns"} {
		mustKubectl(t, "delete", "pod", name, "--timeout=90s")
		waitPodGone(t, name)
	}
}
