package storage

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// etcdURL is the embedded etcd's client URL, started by TestMain.
var etcdURL string

// testClient is a client shared by the tests.
var testClient *clientv3.Client

const waitTimeout = 20 * time.Second

func TestMain(m *testing.M) { os.Exit(runTests(m)) }

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "storage-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)

	cfg := embed.NewConfig()
	cfg.Dir = dir
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	clientURL, peerURL := freeURL(), freeURL()
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "start etcd:", err)
		return 1
	}
	defer e.Close()
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		fmt.Fprintln(os.Stderr, "etcd did not become ready")
		return 1
	}
	etcdURL = clientURL.String()
	testClient = newClient()
	defer testClient.Close()
	return m.Run()
}

func newClient() *clientv3.Client {
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		panic(err) // only in tests
	}
	return c
}

func freeURL() url.URL {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}
}

// newStore returns a running ConfigMap store under a prefix of its own.
func newStore(t *testing.T, mutate func(*Config)) *Store {
	t.Helper()
	cfg := Config{
		Client:     testClient,
		Prefix:     uniquePrefix(t),
		Resource:   v1.Resource("configmaps"),
		Namespaced: true,
		NewFunc:    func() runtime.Object { return &v1.ConfigMap{} },
		Logger:     slog.New(slog.DiscardHandler),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	runStore(t, s)
	return s
}

var prefixes atomic.Int32

// uniquePrefix is a key prefix of the test's own, also across -count runs.
func uniquePrefix(t *testing.T) string {
	return fmt.Sprintf("/registry-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), prefixes.Add(1))
}

// runStore runs s until the test ends and waits for its first list.
func runStore(t *testing.T, s *Store) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-s.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("store not ready")
	}
}

func configMap(ns, name string, labels map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Data:       map[string]string{"k": "v"},
	}
}

func mustCreate(t *testing.T, s *Store, obj runtime.Object) *v1.ConfigMap {
	t.Helper()
	out, err := s.Create(context.Background(), obj, false)
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	return out.(*v1.ConfigMap)
}

func rvOf(t *testing.T, obj runtime.Object) int64 {
	t.Helper()
	rv, err := parseRV(obj.(metav1.Object).GetResourceVersion())
	if err != nil {
		t.Fatalf("resourceVersion of %T: %v", obj, err)
	}
	return rv
}

// waitCache waits until s's cache has reached rv.
func waitCache(t *testing.T, s *Store, rv int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	for {
		if err := s.waitFresh(ctx, rv); err == nil {
			return
		} else if ctx.Err() != nil {
			t.Fatalf("cache did not reach %d: %v", rv, err)
		}
	}
}

// next returns the watch's next event, failing on timeout or close.
func next(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(waitTimeout):
		t.Fatal("timed out waiting for a watch event")
	}
	return watch.Event{}
}

// expectEvent checks the next event's type and name.
func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) *v1.ConfigMap {
	t.Helper()
	ev := next(t, w)
	cm, ok := ev.Object.(*v1.ConfigMap)
	if ev.Type != typ || !ok || cm.Name != name {
		t.Fatalf("got %s %T %v, want %s %q", ev.Type, ev.Object, ev.Object, typ, name)
	}
	return cm
}

// waitClosed waits until the watch's channel is closed, returning how many
// events were still delivered.
func waitClosed(t *testing.T, w watch.Interface) int {
	t.Helper()
	n := 0
	timeout := time.After(waitTimeout)
	for {
		select {
		case _, ok := <-w.ResultChan():
			if !ok {
				return n
			}
			n++
		case <-timeout:
			t.Fatal("watch not closed")
		}
	}
}
