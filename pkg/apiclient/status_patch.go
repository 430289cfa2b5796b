package apiclient

import (
	"encoding/json"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// statusPatch is the kubelet's pod status patch (pkg/util/pod
// PatchPodStatus): a two-way strategic merge patch from base's status to
// st, with metadata.uid in it as a precondition (the patch fails with a
// conflict on another pod of the same name). Unlike the kubelet, which
// reads the pod just before, base may be older than the API's copy, so
// the patch also carries base's resourceVersion as a precondition: a
// patch from a stale base would leave out what base and st agree on and
// the API has changed since. unchanged: the patch would change nothing.
func statusPatch(base *v1.Pod, st v1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldData, err := json.Marshal(v1.Pod{Status: base.Status})
	if err != nil {
		return nil, false, fmt.Errorf("status patch for pod %s/%s: %w", base.Namespace, base.Name, err)
	}
	meta := metav1.ObjectMeta{UID: base.UID, ResourceVersion: base.ResourceVersion}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: meta, Status: st})
	if err != nil {
		return nil, false, fmt.Errorf("status patch for pod %s/%s: %w", base.Namespace, base.Name, err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("status patch for pod %s/%s: %w", base.Namespace, base.Name, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(patch, &fields); err != nil {
		return nil, false, fmt.Errorf("status patch for pod %s/%s: %w", base.Namespace, base.Name, err)
	}
	delete(fields, "metadata") // the preconditions alone change nothing
	return patch, len(fields) == 0, nil
}

// mergeStatus returns the status to write; false when it would move a
// terminal pod (Succeeded or Failed) back to a non-terminal phase.
func mergeStatus(old, reported v1.PodStatus) (v1.PodStatus, bool) {
	if terminal(old.Phase) && !terminal(reported.Phase) {
		return old, false
	}
	st := *reported.DeepCopy()
	// As upstream's mergePodStatus: the kubelet's own conditions come from
	// the report, every other one from the API, even if the report has a
	// copy (its copy may be older than what its owner wrote since).
	st.Conditions = nil
	have := map[v1.PodConditionType]bool{}
	for _, c := range reported.Conditions {
		if podutil.IsKubeletCondition(c.Type) {
			st.Conditions = append(st.Conditions, *c.DeepCopy())
			have[c.Type] = true
		}
	}
	for _, c := range old.Conditions {
		if !have[c.Type] && (!podutil.IsKubeletCondition(c.Type) || c.Type == v1.PodScheduled) {
			st.Conditions = append(st.Conditions, c)
		}
	}
	// DisruptionTarget is shared with the kubelet: its own (a pod it
	// preempted) goes with the move to a terminal phase, replacing the API's.
	if !terminal(old.Phase) && terminal(reported.Phase) {
		if i := slices.IndexFunc(reported.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget }); i >= 0 {
			st.Conditions = slices.DeleteFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.DisruptionTarget })
			st.Conditions = append(st.Conditions, *reported.Conditions[i].DeepCopy())
		}
	}
	if st.NominatedNodeName == "" {
		st.NominatedNodeName = old.NominatedNodeName
	}
	return st, true
}
