package controlplane_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestEventsOneStoreTwoAPIs: core/v1 and events.k8s.io/v1 serve the same
// events, as upstream's one event store does. An event created through
// either API is read, listed, watched and field-selected through the
// other, `kubectl get events` and `kubectl events` show both, and the
// strict events.k8s.io rules hold only for writes through that API.
func TestEventsOneStoreTwoAPIs(t *testing.T) {
	ns := namespace(t)
	cs := clientset(t, adminConfig)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	coreWatch, err := cs.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer coreWatch.Stop()
	v1Watch, err := cs.EventsV1().Events(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer v1Watch.Stop()

	regarding := corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p1", APIVersion: "v1"}
	now := time.Now()
	if _, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "made-v1"}, Regarding: regarding, EventTime: metav1.NewMicroTime(now),
		Reason: "Scheduled", Note: "through events.k8s.io", Type: corev1.EventTypeNormal, Action: "Binding",
		ReportingController: "example.com/test", ReportingInstance: "test-1",
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through events.k8s.io/v1: %v", err)
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "made-core"}, InvolvedObject: regarding,
		Reason: "Pulled", Message: "through core", Type: corev1.EventTypeNormal, Count: 1,
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now), Source: corev1.EventSource{Component: "test"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create through core/v1: %v", err)
	}

	// Each API reads the other's event in its own shape.
	core, err := cs.CoreV1().Events(ns).Get(ctx, "made-v1", metav1.GetOptions{})
	if err != nil || core.Message != "through events.k8s.io" || core.InvolvedObject.Name != "p1" || core.ReportingController != "example.com/test" {
		t.Errorf("core get of the events.k8s.io event: %+v, %v", core, err)
	}
	ev, err := cs.EventsV1().Events(ns).Get(ctx, "made-core", metav1.GetOptions{})
	if err != nil || ev.Note != "through core" || ev.Regarding.Name != "p1" || ev.DeprecatedCount != 1 || ev.DeprecatedSource.Component != "test" {
		t.Errorf("events.k8s.io get of the core event: %+v, %v", ev, err)
	}
	for _, name := range []string{"made-v1", "made-core"} {
		if e := nextEvent[*corev1.Event](t, coreWatch); e.Name != name {
			t.Errorf("core watch: %s, want %s", e.Name, name)
		}
		if e := nextEvent[*eventsv1.Event](t, v1Watch); e.Name != name {
			t.Errorf("events.k8s.io watch: %s, want %s", e.Name, name)
		}
	}

	// Field selectors, each API with its own labels.
	coreList, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p1,reason=Scheduled"})
	if err != nil || len(coreList.Items) != 1 || coreList.Items[0].Name != "made-v1" {
		t.Errorf("core list by involvedObject.name and reason: %v, %v", coreList, err)
	}
	v1List, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=p1,source=test"})
	if err != nil || len(v1List.Items) != 1 || v1List.Items[0].Name != "made-core" {
		t.Errorf("events.k8s.io list by regarding.name and source: %v, %v", v1List, err)
	}
	if _, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=p1"}); !apierrors.IsBadRequest(err) {
		t.Errorf("events.k8s.io list by a core label: %v, want BadRequest", err)
	}

	out := mustKubectl(t, "get", "events", "-n", ns)
	for _, want := range []string{"Scheduled", "through events.k8s.io", "Pulled", "through core"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get events lacks %q", want)
		}
	}
	out = mustKubectl(t, "events", "-n", ns, "--for", "pod/p1")
	for _, want := range []string{"Scheduled", "Pulled"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl events lacks %q", want)
		}
	}

	// The strict rules only for writes through events.k8s.io.
	counted := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "counted"}, InvolvedObject: regarding, EventTime: metav1.NewMicroTime(now),
		Reason: "Test", Message: "m", Type: corev1.EventTypeNormal, Action: "Testing", Count: 2,
		ReportingController: "example.com/test", ReportingInstance: "test-1",
	}
	if _, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
		ObjectMeta: counted.ObjectMeta, Regarding: regarding, EventTime: counted.EventTime, Reason: "Test", Note: "m",
		Type: corev1.EventTypeNormal, Action: "Testing", DeprecatedCount: 2,
		ReportingController: "example.com/test", ReportingInstance: "test-1",
	}, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "deprecatedCount: Invalid value") {
		t.Errorf("events.k8s.io create with deprecatedCount: %v, want Invalid", err)
	}
	if _, err := cs.CoreV1().Events(ns).Create(ctx, counted, metav1.CreateOptions{}); err != nil {
		t.Errorf("core create of the same event: %v", err)
	}
	ev.Note = "changed"
	if _, err := cs.EventsV1().Events(ns).Update(ctx, ev, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("events.k8s.io update of the note: %v, want Invalid (immutable)", err)
	}
	core.Message = "changed"
	if _, err := cs.CoreV1().Events(ns).Update(ctx, core, metav1.UpdateOptions{}); err != nil {
		t.Errorf("core update of the message: %v", err)
	}

	if err := cs.EventsV1().Events(ns).Delete(ctx, "made-core", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete through events.k8s.io: %v", err)
	}
	if _, err := cs.CoreV1().Events(ns).Get(ctx, "made-core", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("core get after the events.k8s.io delete: %v, want NotFound", err)
	}
}

// nextEvent returns the next ADDED object of the watch as T.
func nextEvent[T metav1.Object](t *testing.T, w watch.Interface) T {
	t.Helper()
	for {
		ev := recv(t, w.ResultChan(), "watch event")
		if ev.Type != watch.Added {
			continue
		}
		obj, ok := ev.Object.(T)
		if !ok {
			t.Fatalf("watch sent %T", ev.Object)
		}
		return obj
	}
}
