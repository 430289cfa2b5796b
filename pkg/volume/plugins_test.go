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

// The volumes the kubelet relabels for SELinux are the ones it manages;
// a host path keeps the host's labels.
func TestSELinuxRelabelPlugins(t *testing.T) {
	want := map[string]bool{
		"kubernetes.io/empty-dir": true, "kubernetes.io/configmap": true, "kubernetes.io/secret": true,
		"kubernetes.io/downward-api": true, "kubernetes.io/projected": true,
		"kubernetes.io/host-path": false, "kubernetes.io/pvc": false,
	}
	for _, p := range DefaultPlugins(Host{RootDir: t.TempDir()}) {
		w, ok := want[p.Name()]
		if !ok {
			t.Errorf("plugin %s: say whether the kubelet relabels its volumes", p.Name())
		}
		if relabelPlugins[p.Name()] != w {
			t.Errorf("plugin %s: relabel %v, want %v", p.Name(), relabelPlugins[p.Name()], w)
		}
	}
}
