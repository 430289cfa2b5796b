package storage

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent/nodeagent/pkg/controlplane/storage/encryption"
)

// encrypting returns the transformer of an aescbc-then-identity
// configuration for configmaps.
func encrypting(t *testing.T) Transformer {
	t.Helper()
	c, err := encryption.Parse([]byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [configmaps]
  providers:
  - aescbc: {keys: [{name: k1, secret: ` + base64.StdEncoding.EncodeToString(make([]byte, 32)) + `}]}
  - identity: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	o, err := encryption.Build(c)
	if err != nil {
		t.Fatal(err)
	}
	return o.For(v1.Resource("configmaps"))
}

func rawValue(t *testing.T, key string) string {
	t.Helper()
	resp, err := testClient.Get(context.Background(), key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("raw get %s: %v %v", key, resp, err)
	}
	return string(resp.Kvs[0].Value)
}

// TestEncryptedValues: writes are encrypted, reads (Get, List, the
// cache) decrypt, plaintext written before stays readable and a no-op
// update rewrites it encrypted (upstream's stale rewrite).
func TestEncryptedValues(t *testing.T) {
	s := newStore(t, func(c *Config) { c.Transformer = encrypting(t) })
	ctx := context.Background()
	created := mustCreate(t, s, configMap("ns", "enc", nil))
	key := s.resourcePrefix + "ns/enc"
	if raw := rawValue(t, key); !strings.HasPrefix(raw, "k8s:enc:aescbc:v1:k1:") || strings.Contains(raw, `"enc"`) {
		t.Fatalf("stored %q", raw)
	}
	got, err := s.Get(ctx, "ns", "enc")
	if err != nil || got.(*v1.ConfigMap).Data["k"] != "v" {
		t.Fatalf("get: %v %v", got, err)
	}
	waitCache(t, s, rvOf(t, created))
	list, err := s.List(ctx, "ns", ListOptions{ResourceVersion: "0"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("cached list: %v %v", list, err)
	}

	// A plaintext value, as written before encryption was configured.
	plainKey := s.resourcePrefix + "ns/plain"
	if _, err := testClient.Put(ctx, plainKey, `{"metadata":{"name":"plain","namespace":"ns"},"data":{"k":"old"}}`); err != nil {
		t.Fatal(err)
	}
	got, err = s.Get(ctx, "ns", "plain")
	if err != nil || got.(*v1.ConfigMap).Data["k"] != "old" {
		t.Fatalf("get plaintext: %v %v", got, err)
	}
	if _, err := s.Update(ctx, "ns", "plain", func(o runtime.Object) (runtime.Object, error) { return o, nil }, false); err != nil {
		t.Fatal(err)
	}
	if raw := rawValue(t, plainKey); !strings.HasPrefix(raw, "k8s:enc:aescbc:v1:k1:") {
		t.Fatalf("no-op update kept %q", raw)
	}
}
