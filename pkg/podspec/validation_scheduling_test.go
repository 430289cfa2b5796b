package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func appSelector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
}

func TestValidateAffinity(t *testing.T) {
	podAffinity := func(terms ...v1.PodAffinityTerm) func(p *v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: terms}}
		}
	}
	const req = "spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
	runValidationCases(t, []validationCase{
		{"valid terms", func(p *v1.Pod) {
			term := v1.PodAffinityTerm{LabelSelector: appSelector(), TopologyKey: "zone", MatchLabelKeys: []string{"pod-template-hash"}, MismatchLabelKeys: []string{"tenant"}}
			p.Spec.Affinity = &v1.Affinity{
				NodeAffinity: &v1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 100}}},
				PodAffinity:  &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{term}},
				PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
					{Weight: 1, PodAffinityTerm: term}}},
			}
		}, nil},
		{"node affinity without terms, bad weight and operator", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{NodeAffinity: &v1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &v1.NodeSelector{},
				PreferredDuringSchedulingIgnoredDuringExecution: []v1.PreferredSchedulingTerm{{Weight: 0, Preference: v1.NodeSelectorTerm{
					MatchExpressions: []v1.NodeSelectorRequirement{{Key: "disk", Operator: "Near"}}}}},
			}}
		}, expectErrs(required("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"),
			invalid("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"),
			invalid("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].operator"))},
		{"pod affinity term without topology key", podAffinity(v1.PodAffinityTerm{LabelSelector: appSelector()}),
			expectErrs(required(req+".topologyKey"), invalid(req+".topologyKey"), invalid(req+".topologyKey"))},
		{"bad selector and namespace", podAffinity(v1.PodAffinityTerm{TopologyKey: "zone", Namespaces: []string{"Bad_NS"},
			LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn}}}}),
			expectErrs(required(req+".labelSelector.matchExpressions[0].values"), invalid(req+".namespace"))},
		{"matchLabelKeys without labelSelector", podAffinity(v1.PodAffinityTerm{TopologyKey: "zone", MatchLabelKeys: []string{"app"}, MismatchLabelKeys: []string{"x"}}),
			expectErrs(forbidden(req+".matchLabelKeys"), forbidden(req+".mismatchLabelKeys"))},
		{"key in both matchLabelKeys and mismatchLabelKeys", podAffinity(v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: appSelector(),
			MatchLabelKeys: []string{"tier", "bad key"}, MismatchLabelKeys: []string{"tier"}}),
			expectErrs(invalid(req+".matchLabelKeys[0]"), invalid(req+".matchLabelKeys[1]"))},
		{"preferred weight", func(p *v1.Pod) {
			p.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
				{Weight: 101, PodAffinityTerm: v1.PodAffinityTerm{TopologyKey: "zone"}}}}}
		}, expectErrs(invalid("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight"))},
	})
}

func TestValidateTopologySpreadConstraints(t *testing.T) {
	spread := func(cs ...v1.TopologySpreadConstraint) func(p *v1.Pod) {
		return func(p *v1.Pod) { p.Spec.TopologySpreadConstraints = cs }
	}
	zero, two := int32(0), int32(2)
	sometimes := v1.NodeInclusionPolicy("Sometimes")
	const c0 = "spec.topologySpreadConstraints[0]"
	runValidationCases(t, []validationCase{
		{"valid", spread(v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, MinDomains: &two,
			LabelSelector: appSelector(), MatchLabelKeys: []string{"pod-template-hash"}}), nil},
		{"maxSkew, key, action", spread(v1.TopologySpreadConstraint{WhenUnsatisfiable: "Maybe"}),
			expectErrs(invalid(c0+".maxSkew"), required(c0+".topologyKey"), unsupported(c0+".whenUnsatisfiable"))},
		{"duplicate pair", spread(
			v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway},
			v1.TopologySpreadConstraint{MaxSkew: 2, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway}),
			expectErrs(duplicate(c0 + ".{topologyKey, whenUnsatisfiable}"))},
		{"minDomains zero, and with ScheduleAnyway", spread(v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.ScheduleAnyway, MinDomains: &zero}),
			expectErrs(invalid(c0+".minDomains"), invalid(c0+".minDomains"))},
		{"inclusion policies", spread(v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule,
			NodeAffinityPolicy: &sometimes, NodeTaintsPolicy: &sometimes}),
			expectErrs(unsupported(c0+".nodeAffinityPolicy"), unsupported(c0+".nodeTaintsPolicy"))},
		{"matchLabelKeys without labelSelector", spread(v1.TopologySpreadConstraint{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule,
			MatchLabelKeys: []string{"app"}}), expectErrs(forbidden(c0 + ".matchLabelKeys"))},
	})
}

// A key both in matchLabels and in matchLabelKeys is refused once the
// API server has merged the key, as upstream's create does.
func TestMergeLabelKeys(t *testing.T) {
	pod := basePod()
	pod.Labels = map[string]string{"app": "web", "pod-template-hash": "abc", "tenant": "a"}
	term := v1.PodAffinityTerm{TopologyKey: "zone", LabelSelector: appSelector(),
		MatchLabelKeys: []string{"pod-template-hash", "absent"}, MismatchLabelKeys: []string{"tenant"}}
	pod.Spec.Affinity = &v1.Affinity{
		PodAffinity: &v1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{*term.DeepCopy()}},
		PodAntiAffinity: &v1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []v1.WeightedPodAffinityTerm{
			{Weight: 10, PodAffinityTerm: *term.DeepCopy()}}},
	}
	pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSelector(), MatchLabelKeys: []string{"pod-template-hash"}},
		{MaxSkew: 1, TopologyKey: "host", WhenUnsatisfiable: v1.DoNotSchedule, MatchLabelKeys: []string{"pod-template-hash"}},
	}
	MergeLabelKeys(pod)

	wantTerm := []metav1.LabelSelectorRequirement{
		{Key: "pod-template-hash", Operator: metav1.LabelSelectorOpIn, Values: []string{"abc"}},
		{Key: "tenant", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"a"}},
	}
	for _, got := range [][]metav1.LabelSelectorRequirement{
		pod.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchExpressions,
		pod.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchExpressions,
	} {
		if !equality.Semantic.DeepEqual(got, wantTerm) {
			t.Errorf("affinity term requirements = %v, want %v", got, wantTerm)
		}
	}
	if got := pod.Spec.TopologySpreadConstraints[0].LabelSelector.MatchExpressions; !equality.Semantic.DeepEqual(got, wantTerm[:1]) {
		t.Errorf("spread requirements = %v, want %v", got, wantTerm[:1])
	}
	if pod.Spec.TopologySpreadConstraints[1].LabelSelector != nil {
		t.Errorf("a constraint without labelSelector got one")
	}
	if errs := Validate(pod); len(errs) != 1 || errs[0].Field != "spec.topologySpreadConstraints[1].matchLabelKeys" {
		t.Errorf("Validate(merged) = %v, want only the selector-less constraint refused", errs)
	}

	dup := basePod()
	dup.Labels = map[string]string{"app": "web"}
	dup.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: appSelector(), MatchLabelKeys: []string{"app"}}}
	MergeLabelKeys(dup)
	errs := Validate(dup)
	if len(errs) != 1 || errs[0].Field != "spec.topologySpreadConstraints[0][0]" || errs[0].Detail != "exists in both matchLabelKeys and labelSelector" {
		t.Errorf("Validate(key in both) = %v", errs)
	}
}
