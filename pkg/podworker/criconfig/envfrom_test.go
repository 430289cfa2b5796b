package criconfig

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func envOf(t *testing.T, c *v1.Container, objs EnvObjects) (map[string]string, error) {
	t.Helper()
	pod := &v1.Pod{}
	pod.Namespace = "ns"
	kvs, err := makeEnv(pod, c, Node{}, ContainerInputs{EnvObjects: objs})
	env := map[string]string{}
	for _, kv := range kvs {
		env[kv.Key] = string(kv.Value)
	}
	return env, err
}

func TestEnvFromConfigMapsAndSecrets(t *testing.T) {
	objs := EnvObjects{
		ConfigMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"MODE": "fast", "LEVEL": "3"}}, "gone": nil},
		Secrets:    map[string]*v1.Secret{"creds": {Data: map[string][]byte{"PASSWORD": []byte("s3cret")}}},
	}
	yes := true
	c := &v1.Container{
		EnvFrom: []v1.EnvFromSource{
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}, Prefix: "APP_"},
			{SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "gone"}, Optional: &yes}},
		},
		Env: []v1.EnvVar{
			{Name: "APP_MODE", Value: "slow"}, // env wins over envFrom
			{Name: "LVL", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "LEVEL"}}},
			{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "PASSWORD"}}},
			{Name: "OPT", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "NOPE", Optional: &yes}}},
		},
	}
	env, err := envOf(t, c, objs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"APP_MODE": "slow", "APP_LEVEL": "3", "PASSWORD": "s3cret", "LVL": "3", "PW": "s3cret"}
	for k, v := range want {
		if env[k] != v {
			t.Errorf("%s = %q, want %q (env %v)", k, env[k], v, env)
		}
	}
	if _, ok := env["OPT"]; ok {
		t.Errorf("an optional missing key set OPT")
	}
}

func TestEnvFromMissingObjectsAreConfigErrors(t *testing.T) {
	objs := EnvObjects{ConfigMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{}}}, Secrets: map[string]*v1.Secret{}}
	for _, tc := range []struct {
		src  *v1.EnvVarSource
		want string
	}{
		{&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "K"}}, "couldn't find key K in ConfigMap ns/cfg"},
		{&v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "other"}, Key: "K"}}, `configmap "other" not found`},
		{&v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "s"}, Key: "K"}}, `secret "s" not found`},
	} {
		_, err := envOf(t, &v1.Container{Env: []v1.EnvVar{{Name: "X", ValueFrom: tc.src}}}, objs)
		var ce *ConfigError
		if !errors.As(err, &ce) || err.Error() != tc.want {
			t.Errorf("error %v, want the config error %q", err, tc.want)
		}
	}
}
