package credentialprovider

import (
	"encoding/json"

	v1 "k8s.io/api/core/v1"
)

// FromSecrets builds a keyring from the secrets of type
// kubernetes.io/dockerconfigjson (key .dockerconfigjson) and
// kubernetes.io/dockercfg (key .dockercfg), in their order; other secrets,
// and those with an empty key, are skipped. It returns nil when none was
// usable, and the JSON error when one does not parse (the kubelet fails
// the pull with it).
func FromSecrets(secrets []v1.Secret) (*Keyring, error) {
	k := &Keyring{}
	found := 0
	for i := range secrets {
		s := &secrets[i]
		var cfg Config
		switch b := dockerData(s); {
		case len(b) == 0:
			continue
		case s.Type == v1.SecretTypeDockerConfigJson:
			var doc ConfigJSON
			if err := json.Unmarshal(b, &doc); err != nil {
				return nil, err
			}
			cfg = doc.Auths
		default:
			if err := json.Unmarshal(b, &cfg); err != nil {
				return nil, err
			}
		}
		k.Add(&SecretCoordinates{UID: string(s.UID), Namespace: s.Namespace, Name: s.Name}, cfg)
		found++
	}
	if found == 0 {
		return nil, nil
	}
	return k, nil
}

// dockerData is the secret's docker config document for its type.
func dockerData(s *v1.Secret) []byte {
	switch s.Type {
	case v1.SecretTypeDockerConfigJson:
		return s.Data[v1.DockerConfigJsonKey]
	case v1.SecretTypeDockercfg:
		return s.Data[v1.DockerConfigKey]
	}
	return nil
}
