package volume

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func claimVolume(claim string, readOnly bool) v1.Volume {
	return v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly},
	}}
}

// addBound stores a claim bound to a volume with the given source.
func (e *testEnv) addBound(claim, pvName string, src v1.PersistentVolumeSource) {
	e.getter.mu.Lock()
	defer e.getter.mu.Unlock()
	uid := types.UID("claim-" + claim)
	e.getter.pvcs["ns/"+claim] = &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: claim, UID: uid},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pvName},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
	e.getter.pvs[pvName] = &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: claim, UID: uid},
		},
	}
}

func setUpClaim(t *testing.T, e *testEnv, v v1.Volume) (string, error) {
	t.Helper()
	p := &pvcPlugin{getter: e.getter}
	pod := testPod(v)
	return p.SetUp(context.Background(), e.ctx(t, p, pod, v.Name))
}

func TestPVCHostPathAndLocal(t *testing.T) {
	e := newTestEnv(t)
	hostDir, localDir := t.TempDir(), t.TempDir()
	e.addBound("logs", "pv-logs", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{
		Path: hostDir + "/sub", Type: ptr(v1.HostPathDirectoryOrCreate),
	}})
	e.addBound("db", "pv-db", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: localDir}})
	if got, err := setUpClaim(t, e, claimVolume("logs", false)); err != nil || got != hostDir+"/sub" || !exists(got) {
		t.Errorf("hostPath PV: %q %v", got, err)
	}
	if got, err := setUpClaim(t, e, claimVolume("db", false)); err != nil || got != localDir {
		t.Errorf("local PV: %q %v", got, err)
	}
}

func TestPVCErrors(t *testing.T) {
	e := newTestEnv(t)
	e.addBound("nfs", "pv-nfs", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/x"}})
	e.addBound("gone", "pv-gone", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: "/nonexistent/dir"}})
	e.addBound("file", "pv-file", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/nonexistent/f", Type: ptr(v1.HostPathFile)}})
	e.addBound("stolen", "pv-stolen", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	e.getter.pvs["pv-stolen"].Spec.ClaimRef.UID = "someone-else"
	e.addBound("pending", "", v1.PersistentVolumeSource{})
	e.getter.pvcs["ns/pending"].Status.Phase = v1.ClaimPending
	e.addBound("deleting", "pv-del", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	e.getter.pvcs["ns/deleting"].DeletionTimestamp = &metav1.Time{}
	tests := map[string]string{
		"nfs":      `PV "pv-nfs": volume type nfs is not supported`,
		"gone":     `path "/nonexistent/dir" does not exist`,
		"file":     "hostPath type check failed: /nonexistent/f is not a file",
		"stolen":   `found PV object "pv-stolen" but its pv.Spec.ClaimRef.UID ("someone-else") does not point to claim.UID ("claim-stolen")`,
		"pending":  `PVC ns/pending has non-bound phase ("Pending") or empty pvc.Spec.VolumeName ("")`,
		"deleting": "can't start pod because PVC ns/deleting is being deleted",
		"missing":  `failed to fetch PVC ns/missing from API server: persistentvolumeclaims "missing" not found`,
	}
	for claim, want := range tests {
		_, err := setUpClaim(t, e, claimVolume(claim, false))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err %v, want %q", claim, err, want)
		}
	}
}

func TestPVCEphemeral(t *testing.T) {
	e := newTestEnv(t)
	e.addBound("web-scratch", "pv-eph", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}})
	v := v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}
	if _, err := setUpClaim(t, e, v); err == nil || !strings.Contains(err.Error(), "pod is not owner") {
		t.Errorf("claim not owned by the pod: err %v", err)
	}
	e.getter.pvcs["ns/web-scratch"].OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-1", Controller: ptr(true),
	}}
	if _, err := setUpClaim(t, e, v); err != nil {
		t.Errorf("owned claim: %v", err)
	}
}

func TestPVCLocalFSGroup(t *testing.T) {
	requireRoot(t)
	e := newTestEnv(t)
	dir := t.TempDir()
	e.addBound("db", "pv-db", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dir}})
	p := &pvcPlugin{getter: e.getter}
	for _, ro := range []bool{true, false} {
		pod := testPod(claimVolume("db", ro))
		pod.Spec.SecurityContext = &v1.PodSecurityContext{FSGroup: ptr(int64(5000))}
		if _, err := p.SetUp(context.Background(), e.ctx(t, p, pod, "data")); err != nil {
			t.Fatal(err)
		}
		want := uint32(0)
		if !ro {
			want = 5000
		}
		if g := gidOf(t, dir); g != want {
			t.Errorf("readOnly=%v: gid %d, want %d", ro, g, want)
		}
	}
	if !ClaimReadOnly(&testPod(claimVolume("db", true)).Spec.Volumes[0]) {
		t.Error("ClaimReadOnly false for a read-only claim")
	}
}
