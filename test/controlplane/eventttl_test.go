package controlplane_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// etcdKey is one key as etcd's JSON gateway reports it.
type etcdKey struct {
	found bool
	lease string // the lease ID, "" for none
}

// readEtcdKey reads key from the embedded etcd of a server on dataDir,
// with the API server's etcd client certificate.
func readEtcdKey(t *testing.T, c *http.Client, clientPort int, key string) etcdKey {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"key": base64.StdEncoding.EncodeToString([]byte(key))})
	code, out, err := etcdRequest(c, http.MethodPost, "https://127.0.0.1:"+strconv.Itoa(clientPort)+"/v3/kv/range", string(body))
	if err != nil || code != http.StatusOK {
		t.Fatalf("etcd range %s: %d %q %v", key, code, out, err)
	}
	var resp struct {
		Kvs []struct {
			Lease string `json:"lease"`
		} `json:"kvs"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatalf("etcd range %s: %v in %q", key, err, out)
	}
	if len(resp.Kvs) == 0 {
		return etcdKey{}
	}
	return etcdKey{found: true, lease: resp.Kvs[0].Lease}
}

// TestEventTTL runs a server with --event-ttl 2s: a core event and an
// events.k8s.io event get a lease and are gone from etcd (and the API)
// once it expires; a ConfigMap is given no lease and stays.
func TestEventTTL(t *testing.T) {
	cfg := newServerConfig(filepath.Join(t.TempDir(), "data"))
	cfg.EventTTL = 2 * time.Second
	s, err := startServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()
	cs := clientset(t, s.kubeconfig())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	now := metav1.NewTime(time.Now())
	involved := corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", APIVersion: "v1"}
	if _, err := cs.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "ttl-core"}, InvolvedObject: involved,
		Reason: "Test", Message: "expires", Type: corev1.EventTypeNormal, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "test"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create core event: %v", err)
	}
	if _, err := cs.EventsV1().Events("default").Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "ttl-v1"}, Regarding: involved, EventTime: metav1.NewMicroTime(time.Now()),
		Reason: "Test", Note: "expires", Type: corev1.EventTypeNormal, Action: "Testing",
		ReportingController: "example.com/test", ReportingInstance: "test-1",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create events.k8s.io event: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "ttl-none"}, Data: map[string]string{"k": "v"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create configmap: %v", err)
	}

	pkiDir := filepath.Join(cfg.DataDir, "pki")
	etcdClient := etcdHTTPS(t, pkiDir, filepath.Join(pkiDir, pki.EtcdClientCertFile), filepath.Join(pkiDir, pki.EtcdClientKeyFile))
	events := []string{"/registry/events/default/ttl-core", "/registry/events/default/ttl-v1"}
	for _, key := range events {
		// The event may already have expired; if it is there, it has a lease.
		if k := readEtcdKey(t, etcdClient, cfg.EtcdClientPort, key); k.found && k.lease == "" {
			t.Errorf("%s has no lease", key)
		}
	}
	cmKey := "/registry/configmaps/default/ttl-none"
	if k := readEtcdKey(t, etcdClient, cfg.EtcdClientPort, cmKey); !k.found || k.lease != "" {
		t.Errorf("%s: found %v, lease %q; want it stored without a lease", cmKey, k.found, k.lease)
	}

	const limit = 60 * time.Second
	deadline := time.Now().Add(limit)
	for _, key := range events {
		for readEtcdKey(t, etcdClient, cfg.EtcdClientPort, key).found {
			if time.Now().After(deadline) {
				t.Fatalf("%s still in etcd %s after a 2s --event-ttl", key, limit)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	// The watch cache follows etcd's deletion.
	for time.Now().Before(deadline) {
		_, errCore := cs.CoreV1().Events("default").Get(ctx, "ttl-core", metav1.GetOptions{ResourceVersion: "0"})
		_, errV1 := cs.EventsV1().Events("default").Get(ctx, "ttl-v1", metav1.GetOptions{ResourceVersion: "0"})
		if apierrors.IsNotFound(errCore) && apierrors.IsNotFound(errV1) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	list, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{ResourceVersion: "0", FieldSelector: "metadata.name=ttl-core"})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("the API still lists the expired event: %d items", len(list.Items))
	}
	if k := readEtcdKey(t, etcdClient, cfg.EtcdClientPort, cmKey); !k.found || k.lease != "" {
		t.Errorf("%s after the events expired: found %v, lease %q; want it kept without a lease", cmKey, k.found, k.lease)
	}
}
