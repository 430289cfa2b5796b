package admission

import (
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The API access volume upstream's ServiceAccount admission adds.
const (
	// serviceAccountVolumePrefix starts the volume's name; a volume of the
	// pod that already has it is taken as the token volume.
	serviceAccountVolumePrefix = "kube-api-access-"
	// apiTokenMountPath is where containers find token, ca.crt and
	// namespace.
	apiTokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// rootCAConfigMapName is the config map holding the cluster CA in every
	// namespace (the root CA publisher controller keeps it).
	rootCAConfigMapName = "kube-root-ca.crt"
	// tokenExpirationSeconds is upstream's
	// WarnOnlyBoundTokenExpirationSeconds: one hour and 7 seconds, a value
	// that tells the token issuer the request comes from this volume.
	tokenExpirationSeconds = int64(60*60 + 7)
)

// mountServiceAccountToken adds the API access volume and mounts it
// read-only at apiTokenMountPath in every init and regular
// container that mounts nothing there yet. Ephemeral containers are left
// out: they cannot exist on create, and are added later as they are.
// suffix draws the volume name's random part.
func mountServiceAccountToken(pod *v1.Pod, suffix func() string) {
	name, hasVolume := tokenVolumeName(pod)
	if name == "" {
		name = serviceAccountVolumePrefix + suffix()
	}
	mount := v1.VolumeMount{Name: name, ReadOnly: true, MountPath: apiTokenMountPath}
	mounted := addTokenMount(pod.Spec.InitContainers, mount)
	mounted = addTokenMount(pod.Spec.Containers, mount) || mounted
	if mounted && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{
			Name:         name,
			VolumeSource: v1.VolumeSource{Projected: tokenVolumeSource()},
		})
	}
}

// tokenVolumeName finds a token volume the pod already has (a copy of
// another pod's spec carries one).
func tokenVolumeName(pod *v1.Pod) (string, bool) {
	for _, vol := range pod.Spec.Volumes {
		if strings.HasPrefix(vol.Name, serviceAccountVolumePrefix) {
			return vol.Name, true
		}
	}
	return "", false
}

// addTokenMount mounts the volume in each container without a mount at
// the path, and reports whether any container got it.
func addTokenMount(containers []v1.Container, mount v1.VolumeMount) bool {
	added := false
	for i := range containers {
		if hasMountAt(containers[i].VolumeMounts, mount.MountPath) {
			continue
		}
		containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
		added = true
	}
	return added
}

func hasMountAt(mounts []v1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolumeSource is upstream's TokenVolumeSource: a bound token for the
// API server, the cluster CA and the pod's namespace. The mode is set
// explicitly, as upstream does, so that the spec reads the same before
// and after defaulting.
func tokenVolumeSource() *v1.ProjectedVolumeSource {
	mode := v1.ProjectedVolumeSourceDefaultMode
	exp := tokenExpirationSeconds
	return &v1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &v1.ConfigMapProjection{
				LocalObjectReference: v1.LocalObjectReference{Name: rootCAConfigMapName},
				Items:                []v1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{
				Path:     "namespace",
				FieldRef: &v1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
			}}}},
		},
	}
}
