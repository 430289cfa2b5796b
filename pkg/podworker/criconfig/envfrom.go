package criconfig

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// EnvObjects are the config maps and secrets a container's env refers
// to, fetched before its config is built (nil: not found).
type EnvObjects struct {
	ConfigMaps map[string]*v1.ConfigMap
	Secrets    map[string]*v1.Secret
}

// EnvRefs names the config maps and secrets the container's env and
// envFrom read, for the worker to fetch into EnvObjects.
func EnvRefs(c *v1.Container) (cms, secrets []string) {
	for _, f := range c.EnvFrom {
		if f.ConfigMapRef != nil {
			cms = append(cms, f.ConfigMapRef.Name)
		}
		if f.SecretRef != nil {
			secrets = append(secrets, f.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
			cms = append(cms, e.ValueFrom.ConfigMapKeyRef.Name)
		}
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			secrets = append(secrets, e.ValueFrom.SecretKeyRef.Name)
		}
	}
	return cms, secrets
}

// envFromSources adds every key of the envFrom config maps and secrets
// (with their prefix), as the kubelet: a missing object fails unless
// optional; keys that cannot be variable names are skipped and returned.
func envFromSources(c *v1.Container, ns string, objs EnvObjects, set func(k, v string)) (skipped []string, err error) {
	for _, f := range c.EnvFrom {
		var data map[string]string
		switch {
		case f.ConfigMapRef != nil:
			cm := objs.ConfigMaps[f.ConfigMapRef.Name]
			if cm == nil {
				if isOptional(f.ConfigMapRef.Optional) {
					continue
				}
				return nil, &ConfigError{fmt.Sprintf("configmap %q not found", f.ConfigMapRef.Name)}
			}
			data = cm.Data
		case f.SecretRef != nil:
			s := objs.Secrets[f.SecretRef.Name]
			if s == nil {
				if isOptional(f.SecretRef.Optional) {
					continue
				}
				return nil, &ConfigError{fmt.Sprintf("secret %q not found", f.SecretRef.Name)}
			}
			data = make(map[string]string, len(s.Data))
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			name := f.Prefix + k
			if name == "" || strings.Contains(name, "=") {
				skipped = append(skipped, k)
				continue
			}
			set(name, data[k])
		}
	}
	return skipped, nil
}

// keyRefValue is a configMapKeyRef or secretKeyRef's value, with the
// kubelet's errors for a missing object or key.
func keyRefValue(src *v1.EnvVarSource, ns string, objs EnvObjects) (string, bool, error) {
	if r := src.ConfigMapKeyRef; r != nil {
		cm := objs.ConfigMaps[r.Name]
		if cm == nil {
			return "", false, optionalOr(r.Optional, fmt.Sprintf("configmap %q not found", r.Name))
		}
		v, ok := cm.Data[r.Key]
		if !ok {
			if b, bok := cm.BinaryData[r.Key]; bok {
				return string(b), true, nil
			}
			return "", false, optionalOr(r.Optional, fmt.Sprintf("couldn't find key %v in ConfigMap %v/%v", r.Key, ns, r.Name))
		}
		return v, true, nil
	}
	r := src.SecretKeyRef
	s := objs.Secrets[r.Name]
	if s == nil {
		return "", false, optionalOr(r.Optional, fmt.Sprintf("secret %q not found", r.Name))
	}
	v, ok := s.Data[r.Key]
	if !ok {
		return "", false, optionalOr(r.Optional, fmt.Sprintf("couldn't find key %v in Secret %v/%v", r.Key, ns, r.Name))
	}
	return string(v), true, nil
}

// optionalOr is nil for an optional reference, else the config error.
func optionalOr(optional *bool, msg string) error {
	if isOptional(optional) {
		return nil
	}
	return &ConfigError{msg}
}
