package encryption

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

var secrets = schema.GroupResource{Resource: "secrets"}

func b64(n int, fill byte) string {
	return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{fill}, n))
}

// configYAML is a one-entry configuration for secrets with the given
// providers (YAML list items).
func configYAML(providers string) string {
	return "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n" + providers
}

func provider(name, key string, size int, fill byte) string {
	return "  - " + name + ":\n      keys:\n      - name: " + key + "\n        secret: " + b64(size, fill) + "\n"
}

func build(t *testing.T, yamlText string) Transformer {
	t.Helper()
	c, err := Parse([]byte(yamlText))
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(c).ToAggregate(); err != nil {
		t.Fatal(err)
	}
	o, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	tr := o.For(secrets)
	if tr == nil {
		t.Fatal("no transformer for secrets")
	}
	return tr
}

func TestProvidersRoundTrip(t *testing.T) {
	key := []byte("/registry/secrets/default/s")
	plain := []byte(`{"data":{"password":"c2VjcmV0"}}`)
	for _, tc := range []struct {
		provider string
		sizes    []int
	}{
		{"aescbc", []int{16, 24, 32}},
		{"aesgcm", []int{16, 24, 32}},
		{"secretbox", []int{32}},
	} {
		for _, size := range tc.sizes {
			tr := build(t, configYAML(provider(tc.provider, "k1", size, 7)))
			stored, err := tr.TransformToStorage(plain, key)
			if err != nil {
				t.Fatalf("%s/%d: %v", tc.provider, size, err)
			}
			prefix := "k8s:enc:" + tc.provider + ":v1:k1:"
			if !bytes.HasPrefix(stored, []byte(prefix)) || bytes.Contains(stored, plain) {
				t.Fatalf("%s/%d: stored %q, want prefix %q and no plaintext", tc.provider, size, stored, prefix)
			}
			got, stale, err := tr.TransformFromStorage(stored, key)
			if err != nil || stale || !bytes.Equal(got, plain) {
				t.Fatalf("%s/%d: read back %q stale=%v err=%v", tc.provider, size, got, stale, err)
			}
			other := build(t, configYAML(provider(tc.provider, "k1", size, 8)))
			// aescbc is unauthenticated: a wrong key may pass the padding
			// check by chance (as upstream's), but never yields the value.
			if got, _, err := other.TransformFromStorage(stored, key); err == nil && (tc.provider != "aescbc" || bytes.Equal(got, plain)) {
				t.Fatalf("%s/%d: a different key decrypted the value", tc.provider, size)
			}
		}
	}
}

func TestGCMAuthenticatesKey(t *testing.T) {
	tr := build(t, configYAML(provider("aesgcm", "k1", 32, 1)))
	stored, err := tr.TransformToStorage([]byte("x"), []byte("/registry/secrets/a/b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.TransformFromStorage(stored, []byte("/registry/secrets/a/c")); err == nil {
		t.Fatal("value copied to another key decrypted")
	}
}

func TestRotationAndIdentity(t *testing.T) {
	key := []byte("k")
	old := build(t, configYAML(provider("aescbc", "old", 32, 1)))
	stored, _ := old.TransformToStorage([]byte("v"), key)
	// new key first, old key second: old values read, stale.
	rotated := build(t, configYAML("  - aescbc:\n      keys:\n      - name: new\n        secret: "+b64(32, 2)+
		"\n      - name: old\n        secret: "+b64(32, 1)+"\n  - identity: {}\n"))
	got, stale, err := rotated.TransformFromStorage(stored, key)
	if err != nil || !stale || string(got) != "v" {
		t.Fatalf("old-key value: %q stale=%v err=%v", got, stale, err)
	}
	got, stale, err = rotated.TransformFromStorage([]byte(`{"plain":1}`), key)
	if err != nil || !stale || string(got) != `{"plain":1}` {
		t.Fatalf("plaintext via identity last: %q stale=%v err=%v", got, stale, err)
	}
	fresh, _ := rotated.TransformToStorage([]byte("v"), key)
	if !strings.HasPrefix(string(fresh), "k8s:enc:aescbc:v1:new:") {
		t.Fatalf("write used %q", fresh[:24])
	}
	// identity first: plaintext is current, encrypted data still reads.
	idFirst := build(t, configYAML("  - identity: {}\n"+provider("aescbc", "old", 32, 1)))
	if got, stale, err := idFirst.TransformFromStorage(stored, key); err != nil || !stale || string(got) != "v" {
		t.Fatalf("encrypted value with identity first: %q stale=%v err=%v", got, stale, err)
	}
	if out, _ := idFirst.TransformToStorage([]byte("v"), key); string(out) != "v" {
		t.Fatalf("identity first wrote %q", out)
	}
	// no identity: plaintext is refused.
	if _, _, err := old.TransformFromStorage([]byte("{}"), key); err == nil || err.Error() != "no matching prefix found" {
		t.Fatalf("plaintext without identity: %v", err)
	}
	// unknown key name under a known provider.
	other := build(t, configYAML(provider("aescbc", "x", 32, 1)))
	if _, _, err := other.TransformFromStorage(stored, key); err == nil || err.Error() != "no matching key was found for the provided AES transformer" {
		t.Fatalf("unknown key: %v", err)
	}
	idOnly := build(t, configYAML("  - identity: {}\n"))
	if _, _, err := idOnly.TransformFromStorage(stored, key); err == nil || err.Error() != "identity transformer tried to read encrypted data" {
		t.Fatalf("identity only: %v", err)
	}
}

func TestValidationMessages(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"short key", configYAML(provider("aescbc", "k", 8, 1)),
			`resources[0].providers[0].aescbc.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 8, expected one of [16 24 32]`},
		{"secretbox 16", configYAML(provider("secretbox", "k", 16, 1)),
			`resources[0].providers[0].secretbox.keys[0].secret: Invalid value: "REDACTED": secret is not of the expected length, got 16, expected one of [32]`},
		{"not base64", configYAML("  - aesgcm:\n      keys:\n      - name: k\n        secret: '!!'\n"),
			`resources[0].providers[0].aesgcm.keys[0].secret: Invalid value: "REDACTED": secrets must be base64 encoded`},
		{"no keys", configYAML("  - aescbc:\n      keys: []\n"),
			`resources[0].providers[0].aescbc.keys: Required value: at least one keys is required`},
		{"no name", configYAML("  - aescbc:\n      keys:\n      - secret: " + b64(32, 1) + "\n"),
			`resources[0].providers[0].aescbc.keys[0].name: Required value: name is a mandatory field for a key`},
		{"no resources", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\n",
			`resources: Required value: at least one resources is required`},
		{"no providers", "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n",
			`resources[0].providers: Required value: at least one resources[0].providers is required`},
		{"empty provider", configYAML("  - {}\n"),
			"provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity"},
		{"two in one", configYAML("  - identity: {}\n    aescbc:\n      keys:\n      - name: k\n        secret: " + b64(32, 1) + "\n"),
			"more than one provider specified in a single element, should split into different list elements"},
		{"overlap", strings.Replace(configYAML("  - identity: {}\n"), "[secrets]", "[secrets, '*.']", 1),
			"using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"},
		{"capital", strings.Replace(configYAML("  - identity: {}\n"), "[secrets]", "[Secrets]", 1),
			`resources[0].resources[0]: Invalid value: "Secrets": resource name should not contain capital letters`},
		{"star", strings.Replace(configYAML("  - identity: {}\n"), "[secrets]", "['*']", 1),
			"use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources"},
		{"kms", configYAML("  - kms:\n      name: vault\n      endpoint: unix:///k.sock\n"),
			`resources[0].providers[0].kms: Unsupported value: "vault"`},
	} {
		c, err := Parse([]byte(tc.yaml))
		if err != nil {
			t.Fatalf("%s: parse: %v", tc.name, err)
		}
		err = Validate(c).ToAggregate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "error reading encryption provider configuration file") {
		t.Errorf("missing file: %v", err)
	}
	empty := filepath.Join(dir, "empty")
	_ = os.WriteFile(empty, nil, 0o600)
	if _, err := Load(empty); err == nil || !strings.Contains(err.Error(), "is empty") {
		t.Errorf("empty file: %v", err)
	}
	wrongKind := filepath.Join(dir, "kind")
	_ = os.WriteFile(wrongKind, []byte("apiVersion: v1\nkind: ConfigMap\n"), 0o600)
	if _, err := Load(wrongKind); err == nil || !strings.Contains(err.Error(), "error decoding encryption provider configuration file") {
		t.Errorf("wrong kind: %v", err)
	}
	masked := filepath.Join(dir, "masked")
	_ = os.WriteFile(masked, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n"+
		"- resources: ['*.']\n  providers: [{identity: {}}]\n- resources: [secrets]\n  providers: [{identity: {}}]\n"), 0o600)
	if _, err := Load(masked); err == nil || err.Error() != `resource "secrets" is masked by earlier rule "*."` {
		t.Errorf("masked: %v", err)
	}
}

func TestForWildcards(t *testing.T) {
	c, err := Parse([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n" +
		"- resources: ['*.apps']\n  providers: [{identity: {}}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := Build(c)
	if err != nil {
		t.Fatal(err)
	}
	if o.For(schema.GroupResource{Group: "apps", Resource: "deployments"}) == nil {
		t.Error("*.apps did not cover deployments.apps")
	}
	if o.For(secrets) != nil {
		t.Error("*.apps covered secrets")
	}
}

func TestEnsureFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "enc", "config.yaml")
	if err := EnsureFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v err %v", fi.Mode(), err)
	}
	first, _ := os.ReadFile(path)
	if err := EnsureFile(path); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(path)
	if !bytes.Equal(first, second) {
		t.Fatal("EnsureFile replaced an existing file")
	}
	o, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := o.For(secrets)
	out, _ := tr.TransformToStorage([]byte("{}"), []byte("k"))
	if !strings.HasPrefix(string(out), "k8s:enc:aescbc:v1:"+DefaultKeyName+":") {
		t.Fatalf("generated config wrote %q", out)
	}
	if got, _, err := tr.TransformFromStorage([]byte("{}"), []byte("k")); err != nil || string(got) != "{}" {
		t.Fatalf("generated config cannot read plaintext: %v", err)
	}
}
