package registry

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// TestLifecycleHooksWired: the create and delete hooks, which replace the
// HTTP layer's special cases, are set on exactly the resources that need
// them.
func TestLifecycleHooksWired(t *testing.T) {
	reg := New(Config{})
	want := map[string][]string{
		"BeginCreate":      {"services"},
		"AfterCreate":      {"namespaces"},
		"GracePeriod":      {"pods"},
		"PrepareForDelete": {"namespaces"},
		"FinalizeDelete":   {"namespaces"},
		"Bind":             {"pods"},
	}
	for name, plurals := range want {
		var got []string
		for _, r := range append(reg.All(), reg.ResourceMetrics()...) {
			if !reflect.ValueOf(r).Elem().FieldByName(name).IsNil() {
				got = append(got, r.GVK.Group+"/"+r.Plural)
			}
		}
		var wantKeys []string
		for _, p := range plurals {
			wantKeys = append(wantKeys, "/"+p)
		}
		if !slices.Equal(got, wantKeys) {
			t.Errorf("%s is set on %v, want %v", name, got, wantKeys)
		}
	}
	for _, sub := range []string{"binding"} {
		for _, r := range reg.All() {
			if r.HasSubresource(sub) && r.Bind == nil {
				t.Errorf("%s serves %s without a Bind hook", r.Plural, sub)
			}
		}
	}
}

// fakeStorage records what the hooks ask of the API server.
type fakeStorage struct {
	mu        sync.Mutex
	stored    map[*Resource][]runtime.Object
	created   []runtime.Object
	createdAs []*Resource
	purged    []string
}

func (f *fakeStorage) List(_ context.Context, res *Resource, ns string) ([]runtime.Object, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stored[res]), nil
}

func (f *fakeStorage) CreateInternal(_ context.Context, res *Resource, obj runtime.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.created = append(f.created, obj)
	f.createdAs = append(f.createdAs, res)
}

func (f *fakeStorage) PurgeNamespace(name string) { f.purged = append(f.purged, name) }

func (f *fakeStorage) store(res *Resource, obj runtime.Object) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stored == nil {
		f.stored = map[*Resource][]runtime.Object{}
	}
	f.stored[res] = append(f.stored[res], obj)
}

// beginCreate runs res's BeginCreate, which must succeed.
func beginCreate(t *testing.T, res *Resource, obj runtime.Object, s Storage) FinishFunc {
	t.Helper()
	finish, err := res.BeginCreate(context.Background(), obj, s)
	if err != nil {
		t.Fatal(err)
	}
	return finish
}

func TestServiceBeginCreateAllocates(t *testing.T) {
	reg := New(Config{})
	services := reg.Get("", "v1", "services")
	s := &fakeStorage{}
	s.store(services, &v1.Service{Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Port: 443}}}})
	s.store(services, &v1.Service{Spec: v1.ServiceSpec{ClusterIP: "10.96.1.0", Ports: []v1.ServicePort{{Port: 80, NodePort: 30000}}}})

	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Port: 80}}}}
	beginCreate(t, services, svc, s)(context.Background(), true)
	// Above the static band first (10.96.0.0/12: 256 addresses), the
	// stored services' addresses and ports skipped.
	if svc.Spec.ClusterIP != "10.96.1.1" || !slices.Equal(svc.Spec.ClusterIPs, []string{"10.96.1.1"}) || svc.Spec.Ports[0].NodePort != 30001 {
		t.Errorf("allocated %q %v node port %d", svc.Spec.ClusterIP, svc.Spec.ClusterIPs, svc.Spec.Ports[0].NodePort)
	}

	taken := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "dns"}, Spec: v1.ServiceSpec{ClusterIP: "10.96.1.0"}}
	if _, err := services.BeginCreate(context.Background(), taken, s); !apierrors.IsInvalid(err) {
		t.Fatalf("taken address: %v, want Invalid", err)
	}
	// A failed BeginCreate releases the lock itself.
	beginCreate(t, services, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "again"}}, s)(context.Background(), false)
}

// TestServiceBeginCreateSerializes: a second create allocates only once
// the first is stored, and then sees its address.
func TestServiceBeginCreateSerializes(t *testing.T) {
	reg := New(Config{})
	services := reg.Get("", "v1", "services")
	s := &fakeStorage{}
	first := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	finish := beginCreate(t, services, first, s)
	second := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	done := make(chan error)
	go func() {
		finish, err := services.BeginCreate(context.Background(), second, s)
		if err == nil {
			finish(context.Background(), true)
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("second create allocated while the first held the lock (err %v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	s.store(services, first)
	finish(context.Background(), true)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if first.Spec.ClusterIP == second.Spec.ClusterIP {
		t.Errorf("both services got %s", first.Spec.ClusterIP)
	}
}

// The allocation lock is a registry's own: two registries do not block
// each other.
func TestServiceAllocationLockPerRegistry(t *testing.T) {
	a, b := New(Config{}).Get("", "v1", "services"), New(Config{}).Get("", "v1", "services")
	s := &fakeStorage{}
	defer beginCreate(t, a, &v1.Service{}, s)(context.Background(), false)
	beginCreate(t, b, &v1.Service{}, s)(context.Background(), false)
}

func TestNamespaceHooks(t *testing.T) {
	reg := New(Config{})
	namespaces := reg.Get("", "v1", "namespaces")
	s := &fakeStorage{}
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}, Status: v1.NamespaceStatus{Phase: v1.NamespaceActive}}
	namespaces.AfterCreate(context.Background(), ns, s)
	want := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "team"}}
	if len(s.created) != 1 || !reflect.DeepEqual(s.created[0], want) || s.createdAs[0] != reg.Get("", "v1", "serviceaccounts") {
		t.Errorf("AfterCreate created %v", s.created)
	}

	namespaces.PrepareForDelete(ns)
	if ns.Status.Phase != v1.NamespaceTerminating {
		t.Errorf("marked namespace is %q, want Terminating", ns.Status.Phase)
	}
	namespaces.FinalizeDelete(ns, s)
	if !slices.Equal(s.purged, []string{"team"}) {
		t.Errorf("purged %v", s.purged)
	}
}

func TestPodGracePeriod(t *testing.T) {
	bound := func(phase v1.PodPhase, own *int64, deleting *int64) *v1.Pod {
		return &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{DeletionGracePeriodSeconds: deleting},
			Spec:       v1.PodSpec{NodeName: "n1", TerminationGracePeriodSeconds: own},
			Status:     v1.PodStatus{Phase: phase},
		}
	}
	tests := []struct {
		name string
		pod  *v1.Pod
		opts *int64
		want int64
	}{
		{"unbound", &v1.Pod{}, ptr.To[int64](10), 0},
		{"succeeded", bound(v1.PodSucceeded, nil, nil), nil, 0},
		{"failed", bound(v1.PodFailed, nil, nil), nil, 0},
		{"default", bound(v1.PodRunning, nil, nil), nil, 30},
		{"pod's own", bound(v1.PodRunning, ptr.To[int64](5), nil), nil, 5},
		{"request's", bound(v1.PodRunning, ptr.To[int64](5), nil), ptr.To[int64](60), 60},
		{"request's zero", bound(v1.PodRunning, nil, nil), ptr.To[int64](0), 0},
		{"only shortened", bound(v1.PodRunning, nil, ptr.To[int64](7)), ptr.To[int64](60), 7},
		{"negative", bound(v1.PodRunning, nil, nil), ptr.To[int64](-1), 0},
	}
	for _, tc := range tests {
		if got := pods.GracePeriod(tc.pod, &metav1.DeleteOptions{GracePeriodSeconds: tc.opts}); got != tc.want {
			t.Errorf("%s: grace %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestPodBind(t *testing.T) {
	now, reg := fixedNow(t)
	pods := reg.Get("", "v1", "pods")
	binding := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}}, Target: v1.ObjectReference{Kind: "Node", Name: "n1"}}

	gated := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: v1.PodStatus{Conditions: []v1.PodCondition{
		{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: "no nodes"}}}}
	if err := pods.Bind(gated, binding); err != nil {
		t.Fatal(err)
	}
	wantCond := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(now)}
	if gated.Spec.NodeName != "n1" || !reflect.DeepEqual(gated.Status.Conditions, []v1.PodCondition{wantCond}) || gated.Annotations["a"] != "b" {
		t.Errorf("bound pod: node %q conditions %v annotations %v", gated.Spec.NodeName, gated.Status.Conditions, gated.Annotations)
	}

	fresh := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q"}}
	if err := pods.Bind(fresh, binding); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.Status.Conditions, []v1.PodCondition{wantCond}) {
		t.Errorf("conditions %v", fresh.Status.Conditions)
	}

	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{gated, `Operation cannot be fulfilled on pods/binding "p": pod p is already assigned to node "n1"`},
		{&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "d", DeletionTimestamp: ptr.To(metav1.NewTime(now))}},
			`Operation cannot be fulfilled on pods/binding "d": pod d is being deleted, cannot be assigned to a host`},
	} {
		if err := pods.Bind(tc.pod, binding); !apierrors.IsConflict(err) || err.Error() != tc.want {
			t.Errorf("Bind(%s) = %v, want conflict %q", tc.pod.Name, err, tc.want)
		}
	}
}
