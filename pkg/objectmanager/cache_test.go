package objectmanager

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// getResourceVersions are the resourceVersions the GETs of config maps
// asked for.
func getResourceVersions(f *fakeAPI) []string {
	var out []string
	for _, a := range f.calls("get", "configmaps") {
		out = append(out, a.(k8stesting.GetActionImpl).GetOptions.ResourceVersion)
	}
	return out
}

// TestCacheTTL: the Cache strategy reads an object at most once per TTL
// (refreshes from the API server's cache), again when a pod that refers
// to it is registered, and never for unregistered objects.
func TestCacheTTL(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	f := newFakeAPI(configMap("a", "v1"))
	m, err := New(Config{Client: f.cs, Strategy: Cache, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := m.GetConfigMap(ctx, "ns", "a"); err == nil || err.Error() != `object "ns"/"a" not registered` {
		t.Fatalf("unregistered read: %v", err)
	}
	p := podWith("1", []string{"a"}, nil, nil)
	m.RegisterPod(p)
	getValue(t, m, "a")
	m.RegisterPod(p) // a later sync of the same pod: no refetch
	getValue(t, m, "a")
	if n := len(f.calls("get", "configmaps")); n != 1 {
		t.Fatalf("%d GETs within the TTL, want 1", n)
	}
	if _, err := f.cs.CoreV1().ConfigMaps("ns").Update(ctx, configMap("a", "v2"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clock.Step(defaultTTL + time.Second)
	if got := getValue(t, m, "a"); got != "v2" {
		t.Fatalf("after the TTL: %q", got)
	}
	m.RegisterPod(podWith("2", []string{"a"}, nil, nil)) // a new pod sees the object as it is now
	getValue(t, m, "a")
	if rvs := getResourceVersions(f); len(rvs) != 3 || rvs[0] != "" || rvs[1] != "0" || rvs[2] != "" {
		t.Errorf("GET resourceVersions %q, want a fresh read, a refresh from the cache, a fresh read", rvs)
	}
	list := f.calls("list", "configmaps")
	if len(list) != 0 {
		t.Errorf("%d lists with the Cache strategy", len(list))
	}
}

// TestCacheNodeTTL: the node's TTL annotation replaces the default; a
// NotFound is asked again on every read.
func TestCacheNodeTTL(t *testing.T) {
	clock := clocktesting.NewFakeClock(time.Now())
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{v1.ObjectTTLAnnotationKey: "300"}}}
	f := newFakeAPI(configMap("a", "v1"))
	ttl := TTLFromNode(func(context.Context) (*v1.Node, error) { return node, nil })
	if d, ok := ttl(); !ok || d != 5*time.Minute {
		t.Fatalf("node TTL %v %v", d, ok)
	}
	m, err := New(Config{Client: f.cs, Strategy: Cache, Clock: clock, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	m.RegisterPod(podWith("1", []string{"a", "missing"}, nil, nil))
	getValue(t, m, "a")
	clock.Step(2 * time.Minute)
	getValue(t, m, "a")
	if n := len(f.calls("get", "configmaps")); n != 1 {
		t.Errorf("%d GETs within the node's TTL, want 1", n)
	}
	for range 2 {
		if _, err := m.GetConfigMap(context.Background(), "ns", "missing"); !apierrors.IsNotFound(err) {
			t.Fatalf("missing: %v", err)
		}
	}
	if n := len(f.calls("get", "configmaps")); n != 3 {
		t.Errorf("%d GETs, want 3 (a NotFound is not kept)", n)
	}
	for _, ann := range []map[string]string{nil, {v1.ObjectTTLAnnotationKey: "soon"}} {
		node.Annotations = ann
		if _, ok := ttl(); ok {
			t.Errorf("annotations %v give a TTL", ann)
		}
	}
}

// TestGetStrategy: a GET per read, registered or not.
func TestGetStrategy(t *testing.T) {
	f := newFakeAPI(configMap("a", "v1"))
	m, err := New(Config{Client: f.cs, Strategy: Get})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, m)
	for range 3 {
		getValue(t, m, "a")
	}
	m.RegisterPod(podWith("1", []string{"a"}, nil, nil))
	getValue(t, m, "a")
	if n := len(f.calls("get", "configmaps")); n != 4 {
		t.Errorf("%d GETs, want 4", n)
	}
	if _, err := m.GetSecret(context.Background(), "ns", "nope"); !apierrors.IsNotFound(err) {
		t.Errorf("missing secret: %v", err)
	}
}

func TestUnknownStrategy(t *testing.T) {
	f := newFakeAPI()
	if _, err := New(Config{Client: f.cs, Strategy: "Poll"}); err == nil || err.Error() != "unknown configmap and secret manager mode: Poll" {
		t.Errorf("New: %v", err)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a client")
	}
}
