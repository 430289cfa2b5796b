package credentialprovider

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestEntryUnmarshal(t *testing.T) {
	cases := []struct {
		name, doc string
		want      Entry
		wantErr   bool
	}{
		{"user and password", `{"username":"u","password":"p","email":"e@x"}`, Entry{"u", "p", "e@x"}, false},
		{"auth wins", `{"username":"u","password":"p","auth":"` + b64("a:b") + `"}`, Entry{"a", "b", ""}, false},
		{"password with colons", `{"auth":"` + b64("a:b:c") + `"}`, Entry{"a", "b:c", ""}, false},
		{"unpadded auth", `{"auth":"` + base64.RawStdEncoding.EncodeToString([]byte("ab:c")) + `"}`, Entry{"ab", "c", ""}, false},
		{"auth without colon", `{"auth":"` + b64("nocolon") + `"}`, Entry{}, true},
		{"auth not base64", `{"auth":"!!!"}`, Entry{}, true},
		{"not an object", `[]`, Entry{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var e Entry
			err := json.Unmarshal([]byte(tc.doc), &e)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if !tc.wantErr && e != tc.want {
				t.Errorf("entry = %+v, want %+v", e, tc.want)
			}
		})
	}
	var e Entry
	err := json.Unmarshal([]byte(`{"auth":"`+b64("nocolon")+`"}`), &e)
	if err == nil || err.Error() != "unable to parse auth field, must be formatted as base64(username:password)" {
		t.Errorf("err = %v, want upstream's message", err)
	}
}

func secret(name string, typ v1.SecretType, key, doc string) v1.Secret {
	s := v1.Secret{Type: typ, Data: map[string][]byte{}}
	s.Name, s.Namespace, s.UID = name, "ns", types.UID("uid-"+name)
	if key != "" {
		s.Data[key] = []byte(doc)
	}
	return s
}

func from(name, user string) AuthConfig {
	return AuthConfig{Username: user, Password: "pw", Source: &SecretCoordinates{UID: "uid-" + name, Namespace: "ns", Name: name}}
}

func TestFromSecrets(t *testing.T) {
	jsonDoc := `{"auths":{"r.io":{"auth":"` + b64("json:pw") + `"}}}`
	cfgDoc := `{"https://r.io":{"username":"cfg","password":"pw"}}`
	cases := []struct {
		name    string
		secrets []v1.Secret
		want    []AuthConfig // Lookup("r.io/app"); nil keyring -> nil
		nilRing bool
		wantErr bool
	}{
		{name: "none", nilRing: true},
		{name: "dockerconfigjson", secrets: []v1.Secret{secret("a", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, jsonDoc)},
			want: []AuthConfig{from("a", "json")}},
		{name: "dockercfg", secrets: []v1.Secret{secret("a", v1.SecretTypeDockercfg, v1.DockerConfigKey, cfgDoc)},
			want: []AuthConfig{from("a", "cfg")}},
		{name: "both, in order", secrets: []v1.Secret{
			secret("a", v1.SecretTypeDockercfg, v1.DockerConfigKey, cfgDoc),
			secret("b", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, jsonDoc)},
			want: []AuthConfig{from("a", "cfg"), from("b", "json")}},
		{name: "opaque secret skipped", secrets: []v1.Secret{secret("a", v1.SecretTypeOpaque, v1.DockerConfigJsonKey, jsonDoc)}, nilRing: true},
		{name: "type and key must agree", secrets: []v1.Secret{secret("a", v1.SecretTypeDockercfg, v1.DockerConfigJsonKey, jsonDoc)}, nilRing: true},
		{name: "empty data skipped", secrets: []v1.Secret{secret("a", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, "")}, nilRing: true},
		{name: "malformed JSON", secrets: []v1.Secret{secret("a", v1.SecretTypeDockerConfigJson, v1.DockerConfigJsonKey, `{"auths":`)}, wantErr: true},
		{name: "malformed auth", secrets: []v1.Secret{secret("a", v1.SecretTypeDockercfg, v1.DockerConfigKey, `{"r.io":{"auth":"eA=="}}`)}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k, err := FromSecrets(tc.secrets)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			if (k == nil) != tc.nilRing {
				t.Fatalf("keyring %v, want nil %v", k, tc.nilRing)
			}
			if got := k.Lookup("r.io/app"); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup = %v, want %v", got, tc.want)
			}
		})
	}
}
