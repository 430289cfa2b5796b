package podrefs

import (
	v1 "k8s.io/api/core/v1"
)

// APIReference names the first kind of API object a mirror pod may not
// refer to (NodeRestriction's order), or "".
func APIReference(pod *v1.Pod) string {
	switch {
	case pod.Spec.ServiceAccountName != "":
		return "a service account"
	case len(SecretNames(pod)) > 0:
		return "secrets"
	case len(ConfigMapNames(pod)) > 0:
		return "configmaps"
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.Projected == nil {
			continue
		}
		for _, src := range vol.Projected.Sources {
			if src.ClusterTrustBundle != nil {
				return "clustertrustbundles"
			}
		}
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			return "persistentvolumeclaims"
		}
	}
	return ""
}

// SecretNames lists the secrets a pod refers to, where upstream's
// podutil.VisitPodSecretNames looks: image pull secrets, every
// container's env and envFrom, and the volume sources with secrets.
func SecretNames(pod *v1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	for _, ref := range pod.Spec.ImagePullSecrets {
		add(ref.Name)
	}
	for _, c := range containersAll(pod) {
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, vol := range pod.Spec.Volumes {
		for _, n := range volumeSecretNames(&vol.VolumeSource) {
			add(n)
		}
	}
	return names
}

func volumeSecretNames(src *v1.VolumeSource) []string {
	var names []string
	ref := func(r *v1.LocalObjectReference) {
		if r != nil {
			names = append(names, r.Name)
		}
	}
	switch {
	case src.Secret != nil:
		names = append(names, src.Secret.SecretName)
	case src.AzureFile != nil:
		names = append(names, src.AzureFile.SecretName)
	case src.CephFS != nil:
		ref(src.CephFS.SecretRef)
	case src.Cinder != nil:
		ref(src.Cinder.SecretRef)
	case src.FlexVolume != nil:
		ref(src.FlexVolume.SecretRef)
	case src.RBD != nil:
		ref(src.RBD.SecretRef)
	case src.ScaleIO != nil:
		ref(src.ScaleIO.SecretRef)
	case src.ISCSI != nil:
		ref(src.ISCSI.SecretRef)
	case src.StorageOS != nil:
		ref(src.StorageOS.SecretRef)
	case src.CSI != nil:
		ref(src.CSI.NodePublishSecretRef)
	case src.Projected != nil:
		for _, p := range src.Projected.Sources {
			if p.Secret != nil {
				names = append(names, p.Secret.Name)
			}
		}
	}
	return names
}

// ConfigMapNames lists the config maps a pod refers to, as upstream's
// podutil.VisitPodConfigmapNames.
func ConfigMapNames(pod *v1.Pod) []string {
	var names []string
	add := func(n string) {
		if n != "" {
			names = append(names, n)
		}
	}
	for _, c := range containersAll(pod) {
		for _, e := range c.EnvFrom {
			if e.ConfigMapRef != nil {
				add(e.ConfigMapRef.Name)
			}
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				add(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.ConfigMap != nil {
			add(vol.ConfigMap.Name)
		}
		if vol.Projected != nil {
			for _, p := range vol.Projected.Sources {
				if p.ConfigMap != nil {
					add(p.ConfigMap.Name)
				}
			}
		}
	}
	return names
}

// containersAll is every container of the pod, ephemeral ones included
// (their env can name secrets too).
func containersAll(pod *v1.Pod) []v1.Container {
	all := append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...)
	for _, e := range pod.Spec.EphemeralContainers {
		all = append(all, v1.Container(e.EphemeralContainerCommon))
	}
	return all
}
