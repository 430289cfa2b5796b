package registry

import (
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func newStyleEvent() *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "p.1", Namespace: "default", ResourceVersion: "5"},
		Regarding:  v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", APIVersion: "v1"},
		EventTime:  metav1.NewMicroTime(time.Unix(1700000000, 0)), Type: v1.EventTypeNormal,
		ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-n1",
		Action: "Binding", Reason: "Scheduled", Note: "Successfully assigned default/p to n1",
	}
}

func fieldNames(errs field.ErrorList) string {
	var names []string
	for _, e := range errs {
		names = append(names, e.Field)
	}
	return strings.Join(names, ",")
}

// TestEventsStoredAsCore: events.k8s.io/v1 Events are stored as core
// Events, and the round trip keeps every field.
func TestEventsStoredAsCore(t *testing.T) {
	sa := eventsV1.StoredAs
	if sa == nil || sa.Resource != v1.Resource("events") {
		t.Fatalf("events.k8s.io/v1 StoredAs = %+v, want the core events", sa)
	}
	in := newStyleEvent()
	in.Series = &eventsv1.EventSeries{Count: 2, LastObservedTime: in.EventTime}
	in.Related = &v1.ObjectReference{Kind: "Node", Name: "n1"}
	stored := sa.ToStored(in).(*v1.Event)
	if stored.Message != in.Note || stored.InvolvedObject != in.Regarding || stored.Series.Count != 2 {
		t.Errorf("stored = %+v", stored)
	}
	out := sa.FromStored(stored).(*eventsv1.Event)
	out.TypeMeta = in.TypeMeta
	if !reflect.DeepEqual(out, in) {
		t.Errorf("round trip = %+v, want %+v", out, in)
	}
}

// TestEventValidationPerAPI: the strict rules hold only for writes through
// events.k8s.io/v1 (upstream's ValidateEventCreate/ValidateEventUpdate).
func TestEventValidationPerAPI(t *testing.T) {
	old := EventToCore(newStyleEvent())
	old.Count, old.FirstTimestamp = 3, metav1.NewTime(time.Unix(1700000000, 0))
	if errs := coreEvents.Validate(old); len(errs) != 0 {
		t.Errorf("core create with a count: %v", errs)
	}
	if errs := eventsV1.Validate(EventFromCore(old)); fieldNames(errs) != "deprecatedFirstTimestamp,deprecatedCount" {
		t.Errorf("events.k8s.io create with a count: %v", errs)
	}

	prev := newStyleEvent()
	changed := prev.DeepCopy()
	changed.Note = "another"
	if errs := eventsV1.ValidateUpdate(changed, prev); fieldNames(errs) != "message" {
		t.Errorf("events.k8s.io update of the note: %v", errs)
	}
	if errs := coreEvents.ValidateUpdate(EventToCore(changed), EventToCore(prev)); len(errs) != 0 {
		t.Errorf("core update of the message: %v", errs)
	}
	series := prev.DeepCopy()
	series.Series = &eventsv1.EventSeries{Count: 1}
	if errs := eventsV1.ValidateUpdate(series, prev); fieldNames(errs) != "series.count,series.lastObservedTime" {
		t.Errorf("events.k8s.io update to a bad series: %v", errs)
	}
}
