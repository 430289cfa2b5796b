package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestResourceClaimsRefused: a pod that claims devices gets no sandbox,
// whether its claim is named or still to be made from a template, with
// the kubelet's FailedPrepareDynamicResources event; others run.
func TestResourceClaimsRefused(t *testing.T) {
	h, rec := startClassManager(t, fakeRuntimeClasses{})
	named := scenarioPod("named", "busybox:1")
	claim := "gpu-claim"
	named.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &claim}}
	templated := scenarioPod("templated", "busybox:1")
	tmpl := "gpu-template"
	templated.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: &tmpl}}
	runs := scenarioPod("runs", "busybox:1")
	h.pods <- []*v1.Pod{named, templated, runs}

	eventually(t, "the pod without claims running", func() (bool, string) { return allRunning(h.pod(runs.UID)) })
	for _, want := range []string{
		`FailedPrepareDynamicResources: Failed to prepare dynamic resources: prepare dynamic resources: resource claim "gpu": this node agent does not do dynamic resource allocation (no DRA drivers)`,
		`FailedPrepareDynamicResources: Failed to prepare dynamic resources: prepare dynamic resources: pod "` + templated.Namespace + `/templated": ResourceClaim not created yet`,
	} {
		eventually(t, "event "+want, func() (bool, string) { return rec.has(want) })
	}
	h.rt.Lock()
	defer h.rt.Unlock()
	for _, sb := range h.rt.Sandboxes {
		if n := sb.Metadata.Name; n != "runs" {
			t.Errorf("a sandbox for %s, which claims devices", n)
		}
	}
}
