package persistentvolume

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	rwo = v1.ReadWriteOnce
	rox = v1.ReadOnlyMany
	rwx = v1.ReadWriteMany
)

// pv builds an Available hostPath volume of size with modes.
func pv(name, size string, mutate ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	fs := v1.PersistentVolumeFilesystem
	p := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{rwo},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			VolumeMode:                    &fs,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/data/" + name}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func pvc(name, size string, mutate ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	fs := v1.PersistentVolumeFilesystem
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{rwo},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
			VolumeMode:  &fs,
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, m := range mutate {
		m(c)
	}
	return c
}

func modes(m ...v1.PersistentVolumeAccessMode) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) { p.Spec.AccessModes = m }
}

func claimModes(m ...v1.PersistentVolumeAccessMode) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}

func volClass(name string) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) { p.Spec.StorageClassName = name }
}

func claimClass(name string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &name }
}

func claimedBy(ns, name, uid string) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) {
		p.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: name, UID: types.UID(uid)}
	}
}

func phase(ph v1.PersistentVolumePhase) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) { p.Status.Phase = ph }
}

func TestFindBestMatch(t *testing.T) {
	block := v1.PersistentVolumeBlock
	tests := []struct {
		name    string
		claim   *v1.PersistentVolumeClaim
		volumes []*v1.PersistentVolume
		delay   bool
		want    string // "" for none
	}{
		{"smallest that fits", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("big", "5Gi"), pv("fit", "2Gi"), pv("small", "500Mi")}, false, "fit"},
		{"exact size", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("a", "2Gi"), pv("b", "1Gi")}, false, "b"},
		{"too small", pvc("c", "10Gi"), []*v1.PersistentVolume{pv("a", "2Gi")}, false, ""},
		{"no class takes only classless volumes", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("fast", "1Gi", volClass("fast")), pv("none", "5Gi")}, false, "none"},
		{"a class takes only its volumes", pvc("c", "1Gi", claimClass("fast")),
			[]*v1.PersistentVolume{pv("none", "1Gi"), pv("slow", "1Gi", volClass("slow")), pv("fast", "5Gi", volClass("fast"))}, false, "fast"},
		{"access modes must all be offered", pvc("c", "1Gi", claimModes(rwx)), []*v1.PersistentVolume{pv("rwo", "1Gi")}, false, ""},
		{"a superset of modes fits", pvc("c", "1Gi", claimModes(rwx)), []*v1.PersistentVolume{pv("rwo", "1Gi"), pv("many", "1Gi", modes(rwo, rwx))}, false, "many"},
		{"fewest modes before smallest", pvc("c", "1Gi"),
			[]*v1.PersistentVolume{pv("three", "1Gi", modes(rwo, rox, rwx)), pv("one", "10Gi")}, false, "one"},
		{"selector", pvc("c", "1Gi", func(c *v1.PersistentVolumeClaim) {
			c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}
		}), []*v1.PersistentVolume{pv("plain", "1Gi"), pv("gold", "5Gi", func(p *v1.PersistentVolume) { p.Labels = map[string]string{"tier": "gold"} })}, false, "gold"},
		{"claimed by another", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("taken", "1Gi", claimedBy("default", "other", "uid-other"))}, false, ""},
		{"pre-bound to the claim wins over smaller", pvc("c", "1Gi"),
			[]*v1.PersistentVolume{pv("small", "1Gi"), pv("mine", "9Gi", claimedBy("default", "c", ""))}, false, "mine"},
		{"not Available", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("released", "1Gi", phase(v1.VolumeReleased)), pv("failed", "1Gi", phase(v1.VolumeFailed))}, false, ""},
		{"a new volume counts as Available", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("big", "5Gi"), pv("new", "1Gi", phase(v1.VolumePending))}, false, "new"},
		{"volume mode must match", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("block", "1Gi", func(p *v1.PersistentVolume) { p.Spec.VolumeMode = &block })}, false, ""},
		{"delayed binding leaves free volumes to the scheduler", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("free", "1Gi")}, true, ""},
		{"delayed binding takes a pre-bound volume", pvc("c", "1Gi"), []*v1.PersistentVolume{pv("free", "1Gi"), pv("mine", "1Gi", claimedBy("default", "c", "uid-c"))}, true, "mine"},
	}
	for _, tc := range tests {
		got, err := findBestMatch(tc.claim, tc.volumes, tc.delay)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		name := ""
		if got != nil {
			name = got.Name
		}
		if name != tc.want {
			t.Errorf("%s: got %q, want %q", tc.name, name, tc.want)
		}
	}
}

func TestCheckVolumeSatisfyClaim(t *testing.T) {
	tests := []struct {
		volume *v1.PersistentVolume
		claim  *v1.PersistentVolumeClaim
		want   string
	}{
		{pv("a", "1Gi"), pvc("c", "1Gi"), ""},
		{pv("a", "1Gi"), pvc("c", "2Gi"), "requested PV is too small"},
		{pv("a", "1Gi", volClass("x")), pvc("c", "1Gi"), "storageClassName does not match"},
		{pv("a", "1Gi"), pvc("c", "1Gi", claimModes(rwx)), "incompatible accessMode"},
	}
	for _, tc := range tests {
		err := checkVolumeSatisfyClaim(tc.volume, tc.claim)
		if got := fmtErr(err); got != tc.want {
			t.Errorf("%s for %s: got %q, want %q", tc.volume.Name, tc.claim.Name, got, tc.want)
		}
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
