package podworker

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/probe"
)

// restartOn gives container i of the pod its own restartPolicy and rules.
func restartOn(pod *v1.Pod, i int, policy v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) {
	pod.Spec.Containers[i].RestartPolicy = &policy
	pod.Spec.Containers[i].RestartPolicyRules = rules
}

func exitRule(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
}

// Restart decisions with container-level restart policies and rules
// (KEP-5307), as upstream's ShouldContainerBeRestarted: the container's
// own policy overrides the pod's, rules go first, first match wins.
func TestComputePodActionsRestartRules(t *testing.T) {
	in42 := exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	foo1 := planView{SandboxID: "sb0", InitToStart: -1, Start: []int{0}}
	keep := planView{SandboxID: "sb0", InitToStart: -1}
	cases := []struct {
		name    string
		podPol  v1.RestartPolicy
		pod     func(*v1.Pod)
		code    int32
		backoff BackoffChecker
		want    planView
	}{
		{"Never pod, rule In 42, exit 42: restarts", v1.RestartPolicyNever,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyNever, in42) }, 42, nil, foo1},
		{"Never pod, rule In 42, exit 0: done", v1.RestartPolicyNever,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyNever, in42) }, 0, nil, keep},
		{"Never pod, rule In 42, exit 1: done", v1.RestartPolicyNever,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyNever, in42) }, 1, nil, keep},
		{"Never pod, container Always with rule In 42, exit 0: Always applies", v1.RestartPolicyNever,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyAlways, in42) }, 0, nil, foo1},
		{"Never pod, rule NotIn 0 1, exit 7: restarts", v1.RestartPolicyNever,
			func(p *v1.Pod) {
				restartOn(p, 0, v1.ContainerRestartPolicyNever, exitRule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1))
			}, 7, nil, foo1},
		{"Never pod, rule NotIn 0 1, exit 1: done", v1.RestartPolicyNever,
			func(p *v1.Pod) {
				restartOn(p, 0, v1.ContainerRestartPolicyNever, exitRule(v1.ContainerRestartRuleOnExitCodesOpNotIn, 0, 1))
			}, 1, nil, keep},
		{"first matching rule wins over later ones", v1.RestartPolicyNever,
			func(p *v1.Pod) {
				restartOn(p, 0, v1.ContainerRestartPolicyNever, exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 3), in42)
			}, 42, nil, foo1},
		{"Always pod, container Never: exit 0 is not restarted", v1.RestartPolicyAlways,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyNever) }, 0, nil, keep},
		{"Always pod, container OnFailure: exit 0 done", v1.RestartPolicyAlways,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyOnFailure) }, 0, nil, keep},
		{"Always pod, container OnFailure: exit 3 restarts", v1.RestartPolicyAlways,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyOnFailure) }, 3, nil, foo1},
		{"OnFailure pod, container Always: exit 0 restarts", v1.RestartPolicyOnFailure,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyAlways) }, 0, nil, foo1},
		{"a rule's restart backs off as any restart", v1.RestartPolicyNever,
			func(p *v1.Pod) { restartOn(p, 0, v1.ContainerRestartPolicyNever, in42) }, 42, alwaysBackoff(10e9),
			planView{SandboxID: "sb0", InitToStart: -1, BackingOff: []string{"foo1"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := planBasePod()
			pod.Spec.RestartPolicy = tc.podPol
			tc.pod(pod)
			st := planBaseStatus(pod)
			exited(st, "foo1", tc.code)
			if got := viewOf(ComputePodActions(pod, st, tc.backoff, nil)); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("plan:\n  got  %+v\n  want %+v", got, tc.want)
			}
		})
	}
}

// Once every container is done for good the pod is killed; a container a
// rule restarts keeps it alive.
func TestComputePodActionsRestartRulesLastContainer(t *testing.T) {
	pod := planBasePod()
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	restartOn(pod, 0, v1.ContainerRestartPolicyNever, exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42))
	st := planBaseStatus(pod)
	exited(st, "foo2", 0)
	exited(st, "foo1", 42)
	if got := viewOf(ComputePodActions(pod, st, nil, nil)); !reflect.DeepEqual(got.Start, []int{0}) || got.KillPod {
		t.Errorf("exit 42: plan %+v, want foo1 started and the pod kept", got)
	}
	exited(st, "foo1", 0)
	if got := viewOf(ComputePodActions(pod, st, nil, nil)); !got.KillPod || got.Start != nil {
		t.Errorf("exit 0: plan %+v, want the pod killed", got)
	}
}

// A probe kill has no exit code: the container's own policy decides.
func TestComputePodActionsRestartRulesProbeKill(t *testing.T) {
	for _, tc := range []struct {
		name    string
		podPol  v1.RestartPolicy
		ctrPol  *v1.ContainerRestartPolicy
		restart bool
	}{
		{"Never pod, container Always", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyAlways), true},
		{"Never pod, container OnFailure", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyOnFailure), true},
		{"Always pod, container Never", v1.RestartPolicyAlways, ptrTo(v1.ContainerRestartPolicyNever), false},
		{"Never pod, container Never with a rule", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyNever), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := planBasePod()
			pod.Spec.RestartPolicy = tc.podPol
			pod.Spec.Containers[0].RestartPolicy = tc.ctrPol
			pod.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 137)}
			pod.Spec.Containers[0].LivenessProbe = &v1.Probe{}
			st := planBaseStatus(pod)
			plan := ComputePodActions(pod, st, nil, fakeProbes{probe.Liveness: {"id-foo1": probe.Failure}})
			if _, killed := plan.ContainersToKill["id-foo1"]; !killed {
				t.Fatalf("plan %s: want foo1 killed", plan)
			}
			if restarted := reflect.DeepEqual(plan.ContainersToStart, []int{0}); restarted != tc.restart {
				t.Errorf("plan %s: restart %v, want %v", plan, restarted, tc.restart)
			}
		})
	}
}

// Init containers: a failed one runs again when its own policy and rules
// say so, and fails the pod otherwise, whatever the pod's policy.
func TestComputePodActionsInitRestartRules(t *testing.T) {
	for _, tc := range []struct {
		name   string
		podPol v1.RestartPolicy
		ctrPol *v1.ContainerRestartPolicy
		rules  []v1.ContainerRestartRule
		code   int32
		state  criv1.ContainerState
		failed bool
	}{
		{"Never pod, init OnFailure, exit 1: rerun", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyOnFailure), nil, 1, criv1.ContainerState_CONTAINER_EXITED, false},
		{"Always pod, init Never, exit 1: pod fails", v1.RestartPolicyAlways, ptrTo(v1.ContainerRestartPolicyNever), nil, 1, criv1.ContainerState_CONTAINER_EXITED, true},
		{"Never pod, init Never rule In 42, exit 42: rerun", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyNever),
			[]v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}, 42, criv1.ContainerState_CONTAINER_EXITED, false},
		{"Never pod, init Never rule In 42, exit 2: pod fails", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyNever),
			[]v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}, 2, criv1.ContainerState_CONTAINER_EXITED, true},
		{"Always pod, init Never, unknown state: pod fails", v1.RestartPolicyAlways, ptrTo(v1.ContainerRestartPolicyNever), nil, 0, criv1.ContainerState_CONTAINER_UNKNOWN, true},
		{"Never pod, init OnFailure, unknown state: rerun", v1.RestartPolicyNever, ptrTo(v1.ContainerRestartPolicyOnFailure), nil, 0, criv1.ContainerState_CONTAINER_UNKNOWN, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := planBasePod()
			pod.Spec.RestartPolicy = tc.podPol
			withInit(pod)
			pod.Spec.InitContainers[0].RestartPolicy, pod.Spec.InitContainers[0].RestartPolicyRules = tc.ctrPol, tc.rules
			st := planBaseStatus(pod)
			st.Containers = nil
			addInit(st, "init1", tc.state, tc.code)
			plan := ComputePodActions(pod, st, nil, nil)
			if tc.failed {
				if !plan.InitFailed || !plan.KillPod {
					t.Errorf("plan %s: want initFailed and killPod", plan)
				}
				return
			}
			if plan.InitFailed || plan.InitToStart != 0 {
				t.Errorf("plan %s: want init1 started again", plan)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// The pod phase counts a stopped container as restarting or done by its
// own policy and rules (upstream's getPhase with ContainerRestartRules).
func TestPodPhaseRestartRules(t *testing.T) {
	rules := []v1.ContainerRestartRule{exitRule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)}
	never, always := ptrTo(v1.ContainerRestartPolicyNever), ptrTo(v1.ContainerRestartPolicyAlways)
	cases := []struct {
		name   string
		podPol v1.RestartPolicy
		a      *v1.ContainerRestartPolicy
		inits  []v1.ContainerStatus
		apps   []v1.ContainerStatus
		want   v1.PodPhase
	}{
		{"Never pod, A exits 42 (rule): restarting", v1.RestartPolicyNever, never, nil, cs(csTerminated("A", 42), csTerminated("B", 0)), v1.PodRunning},
		{"Never pod, A back-off after 42", v1.RestartPolicyNever, never, nil, cs(csWaitingLast("A", 42), csTerminated("B", 0)), v1.PodRunning},
		{"Never pod, A exits 0: succeeded", v1.RestartPolicyNever, never, nil, cs(csTerminated("A", 0), csTerminated("B", 0)), v1.PodSucceeded},
		{"Never pod, A exits 1: failed", v1.RestartPolicyNever, never, nil, cs(csTerminated("A", 1), csTerminated("B", 0)), v1.PodFailed},
		{"Never pod, A Always: restarting", v1.RestartPolicyNever, always, nil, cs(csTerminated("A", 0), csTerminated("B", 0)), v1.PodRunning},
		{"Always pod, A Never exits 0, B failed: restarting B", v1.RestartPolicyAlways, never, nil, cs(csTerminated("A", 0), csTerminated("B", 1)), v1.PodRunning},
		{"Always pod, init Never failed: failed", v1.RestartPolicyAlways, nil, cs(csTerminated("X", 1)), cs(csWaiting("A"), csWaiting("B")), v1.PodFailed},
		{"Never pod, init Never rule 42 exited 42: pending", v1.RestartPolicyNever, nil, cs(csTerminated("X", 42)), cs(csWaiting("A"), csWaiting("B")), v1.PodPending},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{RestartPolicy: tc.podPol, Containers: []v1.Container{
				{Name: "A", RestartPolicy: tc.a, RestartPolicyRules: rules}, {Name: "B"}}}}
			if tc.inits != nil {
				pod.Spec.InitContainers = []v1.Container{{Name: "X", RestartPolicy: never, RestartPolicyRules: rules}}
			}
			if got := podPhase(pod, false, tc.inits, tc.apps); got != tc.want {
				t.Errorf("podPhase = %s, want %s", got, tc.want)
			}
		})
	}
}
