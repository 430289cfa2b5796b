package flow

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/test/framework"
)

const gateType = v1.PodConditionType("example.com/ready")

// podCondition is the pod's condition of that type (nil if missing).
func podCondition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// setGate writes the readiness gate's condition through the status
// subresource, as the controller owning the gate would.
func setGate(t *testing.T, name string, status v1.ConditionStatus) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		c := v1.PodCondition{Type: gateType, Status: status, LastTransitionTime: metav1.Now()}
		if old := podCondition(p, gateType); old != nil {
			*old = c
		} else {
			p.Status.Conditions = append(p.Status.Conditions, c)
		}
		_, err = admin.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitReady waits until the pod runs with its Ready condition as wanted.
func waitReady(t *testing.T, name string, want v1.PodCondition) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, apiTimeout, fmt.Sprintf("%s Ready %s %s", name, want.Status, want.Reason), func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		r := podCondition(p, v1.PodReady)
		ok := runningPod(p) && r != nil && r.Status == want.Status && r.Reason == want.Reason && r.Message == want.Message
		return ok, fmt.Errorf("phase %s conditions %+v", p.Status.Phase, p.Status.Conditions)
	})
	return pod
}

// TestReadinessGates: a pod with a readiness gate runs but is not Ready
// until the gate's condition, written through the API by someone else, is
// True; the agent's later status writes (after a container restart) keep
// that condition and Ready; the gate turning False makes it unready again.
func TestReadinessGates(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	grace := int64(1)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "gated", Namespace: "default"},
		Spec: v1.PodSpec{
			NodeName:                      nodeName,
			TerminationGracePeriodSeconds: &grace,
			ReadinessGates:                []v1.PodReadinessGate{{ConditionType: gateType}},
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage,
				Command: []string{"sh", "-c", sleeper}}},
		},
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/gated")

	p := waitReady(t, "gated", v1.PodCondition{Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: `corresponding condition of pod readiness gate "example.com/ready" does not exist.`})
	if c := podCondition(p, v1.ContainersReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("ContainersReady = %+v, want True", c)
	}

	setGate(t, "gated", v1.ConditionTrue)
	waitReady(t, "gated", v1.PodCondition{Status: v1.ConditionTrue})

	// A container restart makes the agent write the pod's status again.
	// The exec may die with the container it kills (exit 137): only a
	// failure to run it at all counts; the restart count below is the check.
	if _, stderr, err := kubectl(t, "exec", "gated", "--", "kill", "1"); err != nil && !strings.Contains(stderr, "exit code 137") {
		t.Fatalf("kubectl exec gated -- kill 1: %v\n%s", err, stderr)
	}
	waitFor(t, apiTimeout, "gated's container to restart and be Ready again", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		r, g := podCondition(p, v1.PodReady), podCondition(p, gateType)
		restarted := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 1
		return restarted && runningPod(p) && r != nil && r.Status == v1.ConditionTrue && g != nil && g.Status == v1.ConditionTrue,
			fmt.Errorf("conditions %+v containers %+v", p.Status.Conditions, p.Status.ContainerStatuses)
	})

	setGate(t, "gated", v1.ConditionFalse)
	p = waitReady(t, "gated", v1.PodCondition{Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: `the status of pod readiness gate "example.com/ready" is not "True", but False`})
	if g := podCondition(p, gateType); g == nil || g.Status != v1.ConditionFalse {
		t.Errorf("gate condition = %+v, want False", g)
	}
}
