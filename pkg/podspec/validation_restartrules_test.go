package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The container restart rules as upstream's validateContainerRestartPolicy
// and validateInitContainerRestartPolicy check them (ContainerRestartRules
// on, RestartAllContainersOnContainerExits off).
func TestValidateRestartRules(t *testing.T) {
	policy := func(p v1.ContainerRestartPolicy) *v1.ContainerRestartPolicy { return &p }
	rule := func(op v1.ContainerRestartRuleOnExitCodesOperator, codes ...int32) v1.ContainerRestartRule {
		return v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart,
			ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: op, Values: codes}}
	}
	on42 := rule(v1.ContainerRestartRuleOnExitCodesOpIn, 42)
	app := func(pol *v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Containers[0].RestartPolicy, p.Spec.Containers[0].RestartPolicyRules = pol, rules
		}
	}
	initC := func(pol *v1.ContainerRestartPolicy, rules ...v1.ContainerRestartRule) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.InitContainers = []v1.Container{{Name: "init", Image: "x", RestartPolicy: pol, RestartPolicyRules: rules}}
			SetDefaults(p)
		}
	}
	many := make([]v1.ContainerRestartRule, 21)
	for i := range many {
		many[i] = on42
	}
	codes := make([]int32, 256)
	for i := range codes {
		codes[i] = int32(i)
	}
	cases := []struct {
		name   string
		mutate func(*v1.Pod)
		want   []string // "<type>: <field>: <detail>"
	}{
		{"app container Never in an Always pod", app(policy(v1.ContainerRestartPolicyNever)), nil},
		{"app container Always with a rule", app(policy(v1.ContainerRestartPolicyAlways), on42), nil},
		{"app container OnFailure, NotIn with no values", app(policy(v1.ContainerRestartPolicyOnFailure), rule(v1.ContainerRestartRuleOnExitCodesOpNotIn)), nil},
		{"rules without a restartPolicy", app(nil, on42),
			[]string{"Required value: spec.containers[0].restartPolicy: must specify restartPolicy when restart rules are used"}},
		{"unknown restartPolicy", app(policy("Sometimes")),
			[]string{`Unsupported value: spec.containers[0].restartPolicy: supported values: "Always", "Never", "OnFailure"`}},
		{"21 rules", app(policy(v1.ContainerRestartPolicyNever), many...),
			[]string{"Too many: spec.containers[0].restartPolicyRules: must have at most 20 items"}},
		{"RestartAllContainers is not an action here", app(policy(v1.ContainerRestartPolicyNever), v1.ContainerRestartRule{
			Action: v1.ContainerRestartRuleActionRestartAllContainers, ExitCodes: on42.ExitCodes}),
			[]string{`Unsupported value: spec.containers[0].restartPolicyRules[0].action: supported values: "Restart"`}},
		{"no exitCodes", app(policy(v1.ContainerRestartPolicyNever), v1.ContainerRestartRule{Action: v1.ContainerRestartRuleActionRestart}),
			[]string{"Required value: spec.containers[0].restartPolicyRules[0].exitCodes: must be specified"}},
		{"bad operator and 256 values", app(policy(v1.ContainerRestartPolicyNever), rule("Is", codes...)),
			[]string{`Unsupported value: spec.containers[0].restartPolicyRules[0].exitCodes.operator: supported values: "In", "NotIn"`,
				"Too many: spec.containers[0].restartPolicyRules[0].exitCodes.values: must have at most 255 items"}},
		{"init container Never", initC(policy(v1.ContainerRestartPolicyNever)), nil},
		{"init container OnFailure with a rule", initC(policy(v1.ContainerRestartPolicyOnFailure), on42), nil},
		{"init container rules without a policy", initC(nil, on42),
			[]string{"Required value: spec.initContainers[0].restartPolicy: must specify restartPolicy when restart rules are used"}},
		{"sidecar with rules", initC(policy(v1.ContainerRestartPolicyAlways), on42),
			[]string{"Forbidden: spec.initContainers[0].restartPolicyRules: restartPolicyRules are not allowed for init containers with restart policy Always"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			got, want := errDetails(Validate(pod)), slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("errors:\n  got  %q\n  want %q", got, want)
			}
		})
	}
}

// hostUsers: false excludes the host's namespaces and block devices, with
// upstream's message (validateHostUsers).
func TestValidateHostUsersFalse(t *testing.T) {
	pod := basePod()
	no := false
	pod.Spec.HostUsers, pod.Spec.HostPID = &no, true
	pod.Spec.Containers[0].VolumeDevices = []v1.VolumeDevice{{Name: "blk", DevicePath: "/dev/xvda"}}
	var got []string
	for _, e := range Validate(pod) {
		if e.Detail == "when `hostUsers` is false" {
			got = append(got, e.Type.String()+": "+e.Field)
		}
	}
	want := []string{"Forbidden: spec.HostPID", "Forbidden: spec.containers[0].volumeDevices"}
	if !slices.Equal(got, want) {
		t.Errorf("hostUsers errors %q, want %q", got, want)
	}
}
