package registry

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// Columns of `kubectl get pv` and `kubectl get pvc`, as upstream's
// printers (pkg/printers/internalversion).
var (
	persistentVolumeColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Capacity", "string", v1.PersistentVolumeSpec{}.SwaggerDoc()["capacity"]),
		col("Access Modes", "string", v1.PersistentVolumeSpec{}.SwaggerDoc()["accessModes"]),
		col("Reclaim Policy", "string", v1.PersistentVolumeSpec{}.SwaggerDoc()["persistentVolumeReclaimPolicy"]),
		col("Status", "string", v1.PersistentVolumeStatus{}.SwaggerDoc()["phase"]),
		col("Claim", "string", v1.PersistentVolumeSpec{}.SwaggerDoc()["claimRef"]),
		col("StorageClass", "string", "StorageClass of the pv"),
		col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pv"),
		col("Reason", "string", v1.PersistentVolumeStatus{}.SwaggerDoc()["reason"]),
		ageColumn,
		wideCol("VolumeMode", "string", v1.PersistentVolumeSpec{}.SwaggerDoc()["volumeMode"]),
	}
	persistentVolumeClaimColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Status", "string", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["phase"]),
		col("Volume", "string", v1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeName"]),
		col("Capacity", "string", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["capacity"]),
		col("Access Modes", "string", v1.PersistentVolumeClaimStatus{}.SwaggerDoc()["accessModes"]),
		col("StorageClass", "string", "StorageClass of the pvc"),
		col("VolumeAttributesClass", "string", "VolumeAttributesClass of the pvc"),
		ageColumn,
		wideCol("VolumeMode", "string", v1.PersistentVolumeClaimSpec{}.SwaggerDoc()["volumeMode"]),
	}
)

func (b *builder) persistentVolumeRow(pv *v1.PersistentVolume) []interface{} {
	claim := ""
	if ref := pv.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	capacity := pv.Spec.Capacity[v1.ResourceStorage]
	phase := string(pv.Status.Phase)
	if pv.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	return []interface{}{
		pv.Name, capacity.String(), accessModesString(pv.Spec.AccessModes), string(pv.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, storagehelpers.GetPersistentVolumeClass(pv), orUnset(pv.Spec.VolumeAttributesClassName),
		pv.Status.Reason, b.age(pv.ObjectMeta), volumeModeString(pv.Spec.VolumeMode),
	}
}

// persistentVolumeClaimRow shows capacity and access modes only once the
// claim names its volume: before, they are the request, not what it got.
func (b *builder) persistentVolumeClaimRow(pvc *v1.PersistentVolumeClaim) []interface{} {
	phase := string(pvc.Status.Phase)
	if pvc.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	capacity, modes := "", ""
	if pvc.Spec.VolumeName != "" {
		q := pvc.Status.Capacity[v1.ResourceStorage]
		capacity, modes = q.String(), accessModesString(pvc.Status.AccessModes)
	}
	return []interface{}{
		pvc.Name, phase, pvc.Spec.VolumeName, capacity, modes, storagehelpers.GetPersistentVolumeClaimClass(pvc),
		orUnset(pvc.Spec.VolumeAttributesClassName), b.age(pvc.ObjectMeta), volumeModeString(pvc.Spec.VolumeMode),
	}
}

// accessModesString abbreviates modes in upstream's fixed order, each once.
func accessModesString(modes []v1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  v1.PersistentVolumeAccessMode
		short string
	}{{v1.ReadWriteOnce, "RWO"}, {v1.ReadOnlyMany, "ROX"}, {v1.ReadWriteMany, "RWX"}, {v1.ReadWriteOncePod, "RWOP"}} {
		for _, have := range modes {
			if have == m.mode {
				out = append(out, m.short)
				break
			}
		}
	}
	return strings.Join(out, ",")
}

func volumeModeString(m *v1.PersistentVolumeMode) string {
	if m == nil {
		return "<unset>"
	}
	return string(*m)
}

func orUnset(s *string) string {
	if s == nil {
		return "<unset>"
	}
	return *s
}
