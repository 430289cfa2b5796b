package ctrltest

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// NewClientset is a fake clientset that, as the API server, fills in
// names from generateName and UIDs on create.
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ca, ok := a.(k8stesting.CreateAction)
		if !ok || ca.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := meta.Accessor(ca.GetObject())
		if err != nil {
			return false, nil, nil
		}
		id := n.Add(1)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), id))
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", id)))
		}
		m.SetResourceVersion(strconv.FormatInt(id, 10))
		return false, nil, nil
	})
	// Updates as the API server's: resourceVersion conflicts, and the
	// status subresource changes only status (and metadata), the main
	// resource everything but status.
	c.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		ua, ok := a.(k8stesting.UpdateAction)
		if !ok || (ua.GetSubresource() != "" && ua.GetSubresource() != "status") {
			return false, nil, nil
		}
		m, err := meta.Accessor(ua.GetObject())
		if err != nil {
			return false, nil, nil
		}
		existing, err := c.Tracker().Get(ua.GetResource(), ua.GetNamespace(), m.GetName())
		if err != nil {
			return true, nil, err
		}
		em, _ := meta.Accessor(existing)
		if rv := m.GetResourceVersion(); rv != "" && rv != em.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(ua.GetResource().GroupResource(), m.GetName(), fmt.Errorf("the object has been modified"))
		}
		out := ua.GetObject().DeepCopyObject()
		from, to := reflect.ValueOf(existing).Elem(), reflect.ValueOf(out).Elem()
		if ua.GetSubresource() == "status" {
			from, to = reflect.ValueOf(out).Elem(), reflect.ValueOf(existing.DeepCopyObject()).Elem()
			out = to.Addr().Interface().(runtime.Object)
			if f := from.FieldByName("ObjectMeta"); f.IsValid() {
				to.FieldByName("ObjectMeta").Set(f)
			}
		}
		if f := from.FieldByName("Status"); f.IsValid() {
			to.FieldByName("Status").Set(f)
		}
		om, _ := meta.Accessor(out)
		om.SetResourceVersion(strconv.FormatInt(n.Add(1), 10))
		if err := c.Tracker().Update(ua.GetResource(), out, ua.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, out, nil
	})
	c.PrependReactor("patch", "*", strategicPatch(c, &n))
	return c
}

// strategicPatch applies strategic merge patches as the API server does:
// a new resourceVersion (informer handlers skip updates without one) and
// a UID in the patch as a precondition (a Conflict when it differs).
func strategicPatch(c *fake.Clientset, n *atomic.Int64) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa, ok := a.(k8stesting.PatchAction)
		if !ok || pa.GetSubresource() != "" || pa.GetPatchType() != types.StrategicMergePatchType {
			return false, nil, nil
		}
		gvr := pa.GetResource()
		existing, err := c.Tracker().Get(gvr, pa.GetNamespace(), pa.GetName())
		if err != nil {
			return true, nil, err
		}
		cur, err := json.Marshal(existing)
		if err != nil {
			return true, nil, err
		}
		merged, err := strategicpatch.StrategicMergePatch(cur, pa.GetPatch(), existing)
		if err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		out := reflect.New(reflect.TypeOf(existing).Elem()).Interface().(runtime.Object)
		if err := json.Unmarshal(merged, out); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		em, _ := meta.Accessor(existing)
		om, _ := meta.Accessor(out)
		if om.GetUID() != em.GetUID() {
			return true, nil, apierrors.NewConflict(gvr.GroupResource(), pa.GetName(),
				fmt.Errorf("Precondition failed: UID in precondition: %s, UID in object meta: %s", em.GetUID(), om.GetUID()))
		}
		om.SetResourceVersion(strconv.FormatInt(n.Add(1), 10))
		if err := c.Tracker().Update(gvr, out, pa.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, out, nil
	}
}

// Start starts the factory and runs fn (a controller's Run) until the test
// ends.
func Start(t *testing.T, f informers.SharedInformerFactory, run ...func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.Start(ctx.Done())
	done := make(chan struct{}, len(run))
	for _, r := range run {
		go func() {
			if err := r(ctx); err != nil {
				t.Errorf("controller: %v", err)
			}
			done <- struct{}{}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range run {
			<-done
		}
		f.Shutdown()
	})
}

// Logger writes to the test's output.
func Logger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// Eventually polls cond (reporting its state) for up to 30s.
func Eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, s := cond(ctx)
		last = s
		return ok, nil
	})
	if err != nil {
		t.Fatalf("%s: %v; last state: %s", what, err, last)
	}
}

// Events lists the events of namespace ns as "Kind name Type Reason:
// message [source]" lines, for tests to look for.
func Events(ctx context.Context, c kubernetes.Interface, ns string) []string {
	l, err := c.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	out := make([]string, 0, len(l.Items))
	for _, e := range l.Items {
		out = append(out, EventLine(&e))
	}
	return out
}

// EventLine is how Events prints one event.
func EventLine(e *v1.Event) string {
	return fmt.Sprintf("%s %s %s %s: %s [%s]", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message, e.Source.Component)
}
