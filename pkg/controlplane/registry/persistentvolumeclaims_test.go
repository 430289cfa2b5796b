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

func claim(name, size string) *v1.PersistentVolumeClaim {
	pvc := &v1.PersistentVolumeClaim{
		ObjectMeta: meta(name),
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	persistentVolumeClaims.Default(pvc)
	return pvc
}

func TestPersistentVolumeClaimCreate(t *testing.T) {
	pvc := claim("c", "1Gi")
	pvc.Status.Phase = v1.ClaimBound
	persistentVolumeClaims.PrepareForCreate(pvc)
	if pvc.Status.Phase != v1.ClaimPending || *pvc.Spec.VolumeMode != v1.PersistentVolumeFilesystem {
		t.Errorf("created: phase %q mode %v", pvc.Status.Phase, *pvc.Spec.VolumeMode)
	}
	tests := []struct {
		name   string
		mutate func(*v1.PersistentVolumeClaim)
		want   []string
		msg    string
	}{
		{"valid", func(*v1.PersistentVolumeClaim) {}, nil, ""},
		{"no access modes", func(c *v1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
			[]string{"FieldValueRequired spec.accessModes"}, "spec.accessModes: Required value: at least 1 access mode is required"},
		{"no storage request", func(c *v1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
			[]string{"FieldValueRequired spec.resources[storage]"}, "spec.resources[storage]: Required value"},
		{"zero storage request", func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("0")
		},
			[]string{"FieldValueInvalid spec.resources[storage]"}, "must be greater than zero"},
		{"unknown access mode", func(c *v1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{"ReadSometimes"}
		},
			[]string{"FieldValueNotSupported spec.accessModes"}, `"ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`},
		{"bad selector", func(c *v1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "In"}}}
		}, []string{"FieldValueRequired spec.selector.matchExpressions[0].values"}, ""},
		{"data source of another kind in the core group", func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "Pod", Name: "p"}
		}, []string{"FieldValueInvalid spec.dataSource"}, "must be 'PersistentVolumeClaim' when referencing the default apiGroup"},
	}
	for _, tc := range tests {
		c := claim("c", "1Gi")
		tc.mutate(c)
		errs := persistentVolumeClaims.Validate(c)
		expectErrors(t, tc.name, errs, tc.want...)
		if tc.msg != "" && (errs.ToAggregate() == nil || !strings.Contains(errs.ToAggregate().Error(), tc.msg)) {
			t.Errorf("%s: message %v lacks %q", tc.name, errs.ToAggregate(), tc.msg)
		}
	}
}

func TestPersistentVolumeClaimUpdate(t *testing.T) {
	pending := claim("c", "1Gi")
	bound := pending.DeepCopy()
	bound.Spec.VolumeName = "pv"
	bound.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Gi")}}
	class := func(s string) *string { return &s }
	tests := []struct {
		name   string
		old    *v1.PersistentVolumeClaim
		mutate func(*v1.PersistentVolumeClaim)
		want   []string
	}{
		{"binding sets volumeName", pending, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv" }, nil},
		{"volumeName is set once", bound, func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = "other" }, []string{"FieldValueForbidden spec"}},
		{"access modes are immutable", pending, func(c *v1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		}, []string{"FieldValueForbidden spec"}},
		{"a pending claim may not grow", pending, func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("5Gi")
		}, []string{"FieldValueForbidden spec"}},
		{"a bound claim may grow", bound, func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("5Gi")
		}, nil},
		{"a bound claim may not shrink below its capacity", bound, func(c *v1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("500Mi")
		}, []string{"FieldValueForbidden spec.resources.requests.storage"}},
		{"a class may be set where none was", pending, func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = class("fast") }, nil},
		{"volume mode is immutable", pending, func(c *v1.PersistentVolumeClaim) {
			block := v1.PersistentVolumeBlock
			c.Spec.VolumeMode = &block
		}, []string{"FieldValueForbidden spec", "FieldValueInvalid volumeMode"}},
	}
	for _, tc := range tests {
		c := tc.old.DeepCopy()
		tc.mutate(c)
		persistentVolumeClaims.PrepareForUpdate(c, tc.old)
		expectErrors(t, tc.name, persistentVolumeClaims.ValidateUpdate(c, tc.old), tc.want...)
	}
	withClass := pending.DeepCopy()
	withClass.Spec.StorageClassName = class("fast")
	changed := withClass.DeepCopy()
	changed.Spec.StorageClassName = class("slow")
	errs := persistentVolumeClaims.ValidateUpdate(changed, withClass)
	const want = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"
	if agg := errs.ToAggregate(); agg == nil || !strings.HasPrefix(agg.Error(), want) {
		t.Errorf("class change: %v", agg)
	}
}

func TestPersistentVolumeClaimStatusUpdate(t *testing.T) {
	old := claim("c", "1Gi")
	c := old.DeepCopy()
	c.Spec.AccessModes = nil // ignored: the spec comes from the stored claim
	c.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}
	persistentVolumeClaims.PrepareForStatusUpdate(c, old)
	expectErrors(t, "status update", persistentVolumeClaims.ValidateStatusUpdate(c, old))
	if len(c.Spec.AccessModes) != 1 {
		t.Errorf("status update changed the spec")
	}
	c.Status.AllocatedResources = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	expectErrors(t, "allocated cpu", persistentVolumeClaims.ValidateStatusUpdate(c, old), "FieldValueNotSupported status.allocatedResources")
}

func TestPersistentVolumeClaimTable(t *testing.T) {
	now, reg := fixedNow(t)
	persistentVolumeClaims := reg.Get("", "v1", "persistentvolumeclaims")
	pending := claim("data", "1Gi")
	pending.CreationTimestamp = metav1.NewTime(now.Add(-10 * time.Second))
	class := "manual"
	pending.Spec.StorageClassName = &class
	pending.Status.Phase = v1.ClaimPending
	bound := pending.DeepCopy()
	bound.Spec.VolumeName = "pv1"
	bound.Status = v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("5Gi")}}
	cols, cells := rows(t, persistentVolumeClaims, false, pending, bound)
	if want := []string{"Name", "Status", "Volume", "Capacity", "Access Modes", "StorageClass", "VolumeAttributesClass", "Age"}; !slices.Equal(cols, want) {
		t.Errorf("columns %q", cols)
	}
	for i, want := range [][]interface{}{
		{"data", "Pending", "", "", "", "manual", "<unset>", "10s"},
		{"data", "Bound", "pv1", "5Gi", "RWO", "manual", "<unset>", "10s"},
	} {
		if !slices.Equal(cells[i], want) {
			t.Errorf("row %d: %q, want %q", i, cells[i], want)
		}
	}
}
