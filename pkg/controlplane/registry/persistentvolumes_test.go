package registry

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func hostPathPV(name string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:               v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeSource: v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data/" + name}},
		},
	}
}

func localAffinity(node string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

func TestPersistentVolumeDefaultsAndCreate(t *testing.T) {
	now, reg := fixedNow(t)
	persistentVolumes := reg.Get("", "v1", "persistentvolumes")
	pv := hostPathPV("a")
	pv.Status.Phase = v1.VolumeBound // users may not set status
	persistentVolumes.Default(pv)
	persistentVolumes.PrepareForCreate(pv)
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Errorf("defaults: reclaim %q mode %v", pv.Spec.PersistentVolumeReclaimPolicy, *pv.Spec.VolumeMode)
	}
	if pv.Status.Phase != v1.VolumePending || !pv.Status.LastPhaseTransitionTime.Time.Equal(now) {
		t.Errorf("created status: %+v", pv.Status)
	}
	expectErrors(t, "valid hostPath", persistentVolumes.Validate(pv))
}

func TestPersistentVolumeValidation(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*v1.PersistentVolume)
		want   []string
		msg    string // part of the aggregated message
	}{
		{"no capacity", func(pv *v1.PersistentVolume) { pv.Spec.Capacity = nil },
			[]string{"FieldValueRequired spec.capacity", "FieldValueNotSupported spec.capacity"}, `spec.capacity: Required value`},
		{"zero capacity", func(pv *v1.PersistentVolume) { pv.Spec.Capacity[v1.ResourceStorage] = resource.MustParse("0") },
			[]string{"FieldValueInvalid spec.capacity[storage]"}, `spec.capacity[storage]: Invalid value: "0": must be greater than zero`},
		{"no access modes", func(pv *v1.PersistentVolume) { pv.Spec.AccessModes = nil },
			[]string{"FieldValueRequired spec.accessModes"}, "spec.accessModes: Required value"},
		{"ReadWriteOncePod with another mode", func(pv *v1.PersistentVolume) { pv.Spec.AccessModes = append(pv.Spec.AccessModes, v1.ReadWriteOncePod) },
			[]string{"FieldValueForbidden spec.accessModes"}, "may not use ReadWriteOncePod with other access modes"},
		{"no volume type", func(pv *v1.PersistentVolume) { pv.Spec.HostPath = nil },
			[]string{"FieldValueRequired spec"}, "spec: Required value: must specify a volume type"},
		{"two volume types", func(pv *v1.PersistentVolume) {
			pv.Spec.Local = &v1.LocalVolumeSource{Path: "/mnt"}
			pv.Spec.NodeAffinity = localAffinity("a")
		}, []string{"FieldValueForbidden spec.local"}, "spec.local: Forbidden: may not specify more than 1 volume type"},
		{"local without node affinity", func(pv *v1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.Local = nil, &v1.LocalVolumeSource{Path: "/mnt"}
		}, []string{"FieldValueRequired spec.nodeAffinity"}, "spec.nodeAffinity: Required value: Local volume requires node affinity"},
		{"local with node affinity", func(pv *v1.PersistentVolume) {
			pv.Spec.HostPath, pv.Spec.Local, pv.Spec.NodeAffinity = nil, &v1.LocalVolumeSource{Path: "/mnt"}, localAffinity("a")
		}, nil, ""},
		{"node affinity without terms", func(pv *v1.PersistentVolume) {
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{}}
		}, []string{"FieldValueRequired spec.nodeAffinity.required.nodeSelectorTerms"}, "must have at least one node selector term"},
		{"node affinity In without values", func(pv *v1.PersistentVolume) {
			pv.Spec.NodeAffinity = localAffinity("a")
			pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values = nil
		}, []string{"FieldValueRequired spec.nodeAffinity.required.nodeSelectorTerms[0].matchExpressions[0].values"},
			"must be specified when `operator` is 'In' or 'NotIn'"},
		{"node affinity without required", func(pv *v1.PersistentVolume) { pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{} },
			[]string{"FieldValueRequired spec.nodeAffinity.required"}, "must specify required node constraints"},
		{"hostPath with ..", func(pv *v1.PersistentVolume) { pv.Spec.HostPath.Path = "/data/../etc" },
			[]string{"FieldValueInvalid spec.hostPath.path"}, "must not contain '..'"},
		{"bad reclaim policy", func(pv *v1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]string{"FieldValueNotSupported spec.persistentVolumeReclaimPolicy"}, `supported values: "Delete", "Recycle", "Retain"`},
		{"bad class", func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = "Fast" },
			[]string{"FieldValueInvalid spec.storageClassName"}, "a lowercase RFC 1123 subdomain"},
	}
	for _, tc := range tests {
		pv := hostPathPV("pv")
		tc.mutate(pv)
		errs := persistentVolumes.Validate(pv)
		expectErrors(t, tc.name, errs, tc.want...)
		if tc.msg != "" && (errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), tc.msg)) {
			t.Errorf("%s: message %v lacks %q", tc.name, errs.ToAggregate(), tc.msg)
		}
	}
}

func TestPersistentVolumeUpdate(t *testing.T) {
	old := hostPathPV("pv")
	persistentVolumes.Default(old)
	tests := []struct {
		name   string
		mutate func(*v1.PersistentVolume)
		want   []string
	}{
		{"capacity and claimRef change", func(pv *v1.PersistentVolume) {
			pv.Spec.Capacity[v1.ResourceStorage] = resource.MustParse("2Gi")
			pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "c"}
		}, nil},
		{"source is immutable", func(pv *v1.PersistentVolume) { pv.Spec.HostPath.Path = "/elsewhere" },
			[]string{"FieldValueForbidden spec.persistentvolumesource"}},
		{"volume mode is immutable", func(pv *v1.PersistentVolume) {
			block := v1.PersistentVolumeBlock
			pv.Spec.VolumeMode = &block
		}, []string{"FieldValueInvalid volumeMode"}},
		{"node affinity may be set once", func(pv *v1.PersistentVolume) { pv.Spec.NodeAffinity = localAffinity("a") }, nil},
	}
	for _, tc := range tests {
		pv := old.DeepCopy()
		tc.mutate(pv)
		persistentVolumes.Default(pv)
		expectErrors(t, tc.name, persistentVolumes.ValidateUpdate(pv, old), tc.want...)
	}
	withAffinity := old.DeepCopy()
	withAffinity.Spec.NodeAffinity = localAffinity("a")
	moved := withAffinity.DeepCopy()
	moved.Spec.NodeAffinity = localAffinity("b")
	expectErrors(t, "node affinity is immutable", persistentVolumes.ValidateUpdate(moved, withAffinity), "FieldValueInvalid nodeAffinity")
	if msg := persistentVolumes.ValidateUpdate(func() *v1.PersistentVolume {
		pv := old.DeepCopy()
		pv.Spec.HostPath.Path = "/x"
		return pv
	}(), old).ToAggregate().Error(); !strings.HasPrefix(msg, "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n") {
		t.Errorf("immutable source message: %q", msg)
	}
}

func TestPersistentVolumeStatusUpdate(t *testing.T) {
	now, reg := fixedNow(t)
	persistentVolumes := reg.Get("", "v1", "persistentvolumes")
	old := hostPathPV("pv")
	persistentVolumes.Default(old)
	before := metav1.NewTime(now.Add(-time.Hour))
	old.Status = v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable, LastPhaseTransitionTime: &before}

	pv := old.DeepCopy()
	pv.Spec.Capacity[v1.ResourceStorage] = resource.MustParse("9Gi") // ignored through status
	pv.Status.Phase = v1.VolumeBound
	persistentVolumes.PrepareForStatusUpdate(pv, old)
	if q := pv.Spec.Capacity[v1.ResourceStorage]; q.String() != "1Gi" {
		t.Errorf("status update changed the spec: capacity %s", q.String())
	}
	if !pv.Status.LastPhaseTransitionTime.Time.Equal(now) {
		t.Errorf("phase change not stamped: %v", pv.Status.LastPhaseTransitionTime)
	}
	expectErrors(t, "status update", persistentVolumes.ValidateStatusUpdate(pv, old))

	same := old.DeepCopy()
	same.Status.Message = "x"
	persistentVolumes.PrepareForStatusUpdate(same, old)
	if !same.Status.LastPhaseTransitionTime.Equal(&before) {
		t.Errorf("no phase change, but the time moved: %v", same.Status.LastPhaseTransitionTime)
	}

	// Updates of the main resource keep the status.
	upd := old.DeepCopy()
	upd.Status.Phase = v1.VolumeReleased
	persistentVolumes.PrepareForUpdate(upd, old)
	if upd.Status.Phase != v1.VolumeAvailable {
		t.Errorf("update changed the status: %v", upd.Status.Phase)
	}
}

func TestPersistentVolumeTable(t *testing.T) {
	now, reg := fixedNow(t)
	persistentVolumes := reg.Get("", "v1", "persistentvolumes")
	pv := hostPathPV("pv1")
	persistentVolumes.Default(pv)
	pv.CreationTimestamp = metav1.NewTime(now.Add(-3 * time.Minute))
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany, v1.ReadWriteOnce, v1.ReadWriteOnce}
	pv.Spec.StorageClassName = "manual"
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "claim"}
	pv.Status.Phase = v1.VolumeBound
	cols, cells := rows(t, persistentVolumes, true, pv)
	wantCols := []string{"Name", "Capacity", "Access Modes", "Reclaim Policy", "Status", "Claim", "StorageClass", "VolumeAttributesClass", "Reason", "Age", "VolumeMode"}
	if !slices.Equal(cols, wantCols) {
		t.Errorf("columns %q", cols)
	}
	want := []interface{}{"pv1", "1Gi", "RWO,RWX", "Retain", "Bound", "ns/claim", "manual", "<unset>", "", "3m", "Filesystem"}
	if !slices.Equal(cells[0], want) {
		t.Errorf("row %q, want %q", cells[0], want)
	}
	if cols, _ := rows(t, persistentVolumes, false, pv); len(cols) != 10 {
		t.Errorf("narrow columns %q", cols)
	}
}
