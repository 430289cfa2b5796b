package admission

import (
	"fmt"
	"slices"
	"strconv"

	v1 "k8s.io/api/core/v1"
)

// enforceMountableSecretsAnnotation, set to true on a service account,
// limits its pods to the secrets it lists (upstream's opt-in).
const enforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"

func enforceMountableSecrets(sa *v1.ServiceAccount) bool {
	v, ok := sa.Annotations[enforceMountableSecretsAnnotation]
	if !ok {
		return false
	}
	enforce, _ := strconv.ParseBool(v)
	return enforce
}

// limitSecretReferences refuses a pod that uses a secret its service
// account does not list, in upstream's order and words: secret volumes,
// then init containers' and containers' env and envFrom, then image pull
// secrets (checked against the account's imagePullSecrets).
func limitSecretReferences(sa *v1.ServiceAccount, pod *v1.Pod) error {
	mountable := secretRefNames(sa.Secrets)
	for _, vol := range pod.Spec.Volumes {
		if vol.Secret != nil && !slices.Contains(mountable, vol.Secret.SecretName) {
			return fmt.Errorf("volume with secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", vol.Secret.SecretName, sa.Name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if err := limitContainerSecrets("init container", c, mountable, sa.Name); err != nil {
			return err
		}
	}
	for _, c := range pod.Spec.Containers {
		if err := limitContainerSecrets("container", c, mountable, sa.Name); err != nil {
			return err
		}
	}
	pull := make([]string, 0, len(sa.ImagePullSecrets))
	for _, ref := range sa.ImagePullSecrets {
		pull = append(pull, ref.Name)
	}
	for i, ref := range pod.Spec.ImagePullSecrets {
		if !slices.Contains(pull, ref.Name) {
			return fmt.Errorf(`imagePullSecrets[%d].name="%s" is not allowed because service account %s does not reference that imagePullSecret`, i, ref.Name, sa.Name)
		}
	}
	return nil
}

// limitEphemeralSecretReferences is the same check for the ephemeral
// containers a debugging user adds.
func limitEphemeralSecretReferences(sa *v1.ServiceAccount, pod *v1.Pod) error {
	mountable := secretRefNames(sa.Secrets)
	for _, e := range pod.Spec.EphemeralContainers {
		if err := limitContainerSecrets("ephemeral container", v1.Container(e.EphemeralContainerCommon), mountable, sa.Name); err != nil {
			return err
		}
	}
	return nil
}

func limitContainerSecrets(kind string, c v1.Container, mountable []string, sa string) error {
	for _, env := range c.Env {
		if env.ValueFrom == nil || env.ValueFrom.SecretKeyRef == nil {
			continue
		}
		if name := env.ValueFrom.SecretKeyRef.Name; !slices.Contains(mountable, name) {
			return fmt.Errorf("%s %s with envVar %s referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, c.Name, env.Name, name, sa)
		}
	}
	for _, from := range c.EnvFrom {
		if from.SecretRef != nil && !slices.Contains(mountable, from.SecretRef.Name) {
			return fmt.Errorf("%s %s with envFrom referencing secret.secretName=\"%s\" is not allowed because service account %s does not reference that secret", kind, c.Name, from.SecretRef.Name, sa)
		}
	}
	return nil
}

func secretRefNames(refs []v1.ObjectReference) []string {
	names := make([]string, 0, len(refs))
	for _, r := range refs {
		names = append(names, r.Name)
	}
	return names
}
