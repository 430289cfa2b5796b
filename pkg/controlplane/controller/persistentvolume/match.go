package persistentvolume

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// findBestMatch picks the volume for claim as upstream's volume index
// does: volumes are grouped by their set of access modes; the groups that
// hold every mode the claim asks for are tried fewest modes first, and in
// a group the volume pre-bound to the claim, else the smallest fitting
// Available one, wins (storagehelpers.FindMatchingVolume). With
// delayBinding only a pre-bound volume is returned: the scheduler chooses
// the others.
//
// A new volume the binder has not yet marked Available counts as
// Available: upstream would skip it until then, so that a claim created
// right after two volumes could get the bigger one.
func findBestMatch(claim *v1.PersistentVolumeClaim, volumes []*v1.PersistentVolume, delayBinding bool) (*v1.PersistentVolume, error) {
	groups := map[string][]*v1.PersistentVolume{}
	for _, pv := range volumes {
		if pv.Status.Phase == v1.VolumePending && pv.Spec.ClaimRef == nil {
			pv = pv.DeepCopy()
			pv.Status.Phase = v1.VolumeAvailable
		}
		key := modesKey(pv.Spec.AccessModes)
		groups[key] = append(groups[key], pv)
	}
	var keys []string
	for key, group := range groups {
		if storagehelpers.CheckAccessModes(claim, group[0]) {
			keys = append(keys, key)
		}
	}
	// Fewest modes first; the name only makes the order stable.
	sort.Slice(keys, func(i, j int) bool {
		ni, nj := strings.Count(keys[i], ",")+1, strings.Count(keys[j], ",")+1
		if ni != nj {
			return ni < nj
		}
		return keys[i] < keys[j]
	})
	for _, key := range keys {
		// Sorted by name so that equal sizes pick the same volume each time.
		group := groups[key]
		sort.Slice(group, func(i, j int) bool { return group[i].Name < group[j].Name })
		pv, err := storagehelpers.FindMatchingVolume(claim, group, nil, nil, delayBinding, true)
		if err != nil {
			return nil, fmt.Errorf("find a volume for claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		if pv != nil {
			return pv, nil
		}
	}
	return nil, nil
}

// modesKey is the set of access modes as a canonical string.
func modesKey(modes []v1.PersistentVolumeAccessMode) string {
	set := map[v1.PersistentVolumeAccessMode]bool{}
	for _, m := range modes {
		set[m] = true
	}
	var out []string
	for m := range set {
		out = append(out, string(m))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// checkVolumeSatisfyClaim is upstream's check of a volume a claim names:
// the error says why it does not fit.
func checkVolumeSatisfyClaim(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	requested := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := pv.Spec.Capacity[v1.ResourceStorage]
	switch {
	case pv.DeletionTimestamp != nil:
		return fmt.Errorf("the volume is marked for deletion %q", pv.Name)
	case capacity.Value() < requested.Value():
		return errors.New("requested PV is too small")
	case storagehelpers.GetPersistentVolumeClass(pv) != storagehelpers.GetPersistentVolumeClaimClass(claim):
		return errors.New("storageClassName does not match")
	case ptr.Deref(pv.Spec.VolumeAttributesClassName, "") != ptr.Deref(claim.Spec.VolumeAttributesClassName, ""):
		return errors.New("volumeAttributesClassName does not match")
	case storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec):
		return errors.New("incompatible volumeMode")
	case !storagehelpers.CheckAccessModes(claim, pv):
		return errors.New("incompatible accessMode")
	}
	return nil
}
