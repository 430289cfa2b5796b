package volume

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestFindPlugin(t *testing.T) {
	plugins := DefaultPlugins(Host{RootDir: t.TempDir()})
	tests := map[string]v1.VolumeSource{
		"kubernetes.io/empty-dir":    {EmptyDir: &v1.EmptyDirVolumeSource{}},
		"kubernetes.io/host-path":    {HostPath: &v1.HostPathVolumeSource{Path: "/x"}},
		"kubernetes.io/configmap":    {ConfigMap: &v1.ConfigMapVolumeSource{}},
		"kubernetes.io/secret":       {Secret: &v1.SecretVolumeSource{}},
		"kubernetes.io/downward-api": {DownwardAPI: &v1.DownwardAPIVolumeSource{}},
		"kubernetes.io/projected":    {Projected: &v1.ProjectedVolumeSource{}},
		"kubernetes.io/pvc":          {PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}},
	}
	for want, src := range tests {
		p, err := FindPlugin(plugins, &v1.Volume{Name: "v", VolumeSource: src})
		if err != nil || p.Name() != want {
			t.Errorf("%s: got %v, %v", want, p, err)
		}
	}
	_, err := FindPlugin(plugins, &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{NFS: &v1.NFSVolumeSource{}}})
	if err == nil || err.Error() != "no volume plugin matched" {
		t.Errorf("nfs: err %v", err)
	}
	twice := append(plugins, &hostPathPlugin{})
	_, err = FindPlugin(twice, &v1.Volume{Name: "v", VolumeSource: tests["kubernetes.io/host-path"]})
	if err == nil || err.Error() != "multiple volume plugins matched: kubernetes.io/host-path,kubernetes.io/host-path" {
		t.Errorf("duplicate: err %v", err)
	}
}
