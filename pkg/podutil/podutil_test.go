package podutil

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// ContainerShouldRestart as upstream's podutil.ContainerShouldRestart.
func TestContainerShouldRestart(t *testing.T) {
	pol := func(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }
	for _, tc := range []struct {
		name   string
		podPol v1.RestartPolicy
		c      *v1.Container
		code   int32
		want   bool
	}{
		{"no container: the pod's Never", v1.RestartPolicyNever, nil, 1, false},
		{"pod Always", v1.RestartPolicyAlways, &v1.Container{}, 0, true},
		{"pod OnFailure, exit 0", v1.RestartPolicyOnFailure, &v1.Container{}, 0, false},
		{"pod OnFailure, exit 1", v1.RestartPolicyOnFailure, &v1.Container{}, 1, true},
		{"pod default (empty): Always", "", &v1.Container{}, 0, true},
		{"container Never overrides pod Always", v1.RestartPolicyAlways, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever)}, 1, false},
		{"container OnFailure overrides pod Never", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyOnFailure)}, 1, true},
		{"rules without a policy are ignored", v1.RestartPolicyNever, &v1.Container{RestartPolicyRules: []v1.ContainerRestartRule{inRule(42)}}, 42, false},
		{"In matches", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{inRule(42)}}, 42, true},
		{"In does not match: the container's policy", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{inRule(42)}}, 0, false},
		{"NotIn matches", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{notInRule(0)}}, 3, true},
		{"a rule without exitCodes never matches", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart}}}, 3, false},
		{"an unknown operator never matches", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart, ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: "Is", Values: []int32{3}}}}}, 3, false},
		{"a matching rule with another action falls back to the policy", v1.RestartPolicyNever, &v1.Container{RestartPolicy: pol(v1.ContainerRestartPolicyNever), RestartPolicyRules: []v1.ContainerRestartRule{
			{Action: "RestartAllContainers", ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{3}}}, inRule(3)}}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ContainerShouldRestart(tc.c, &v1.PodSpec{RestartPolicy: tc.podPol}, tc.code); got != tc.want {
				t.Errorf("ContainerShouldRestart = %v, want %v", got, tc.want)
			}
		})
	}
}

func inRule(codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: codes}}
}

func notInRule(codes ...int32) v1.ContainerRestartRule {
	return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
		ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpNotIn, Values: codes}}
}
