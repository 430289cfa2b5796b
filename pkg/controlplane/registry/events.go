package registry

import (
	"fmt"
	"reflect"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/podspec"
)

// Upstream stores one event resource and serves it as core/v1 Event and as
// events.k8s.io/v1 Event; EventToCore and EventFromCore convert between the
// two so the HTTP layer can do the same. Both validate on the core form,
// with upstream's (core) field names.

func (b *builder) coreEvents() *Resource {
	return &Resource{
		GVK:        v1.SchemeGroupVersion.WithKind("Event"),
		Plural:     "events",
		Singular:   "event",
		ShortNames: []string{"ev"},
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &v1.Event{} },
		NewList:    func() runtime.Object { return &v1.EventList{} },

		// The core API keeps legacy validation on create and update.
		Validate:       check(func(e *v1.Event) field.ErrorList { return validateEvent(e, true) }),
		ValidateUpdate: check2(func(e, _ *v1.Event) field.ErrorList { return validateEvent(e, true) }),
		FieldSet:       fieldSet(true, eventFields),
		Table:          table(eventColumns, b.eventRow),
	}
}

// eventsV1 serves the core events through events.k8s.io/v1: the objects
// are core/v1 Events in etcd, converted on the way in and out; its field
// selectors are upstream's events.k8s.io labels.
func (b *builder) eventsV1() *Resource {
	coreEvents := b.coreEvents()
	return &Resource{
		GVK:        eventsv1.SchemeGroupVersion.WithKind("Event"),
		Plural:     "events",
		Singular:   "event",
		ShortNames: []string{"ev"},
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &eventsv1.Event{} },
		NewList:    func() runtime.Object { return &eventsv1.EventList{} },
		StoredAs: &StoredAs{
			Resource:   v1.Resource("events"),
			New:        func() runtime.Object { return &v1.Event{} },
			ToStored:   func(o runtime.Object) runtime.Object { return EventToCore(o.(*eventsv1.Event)) },
			FromStored: func(o runtime.Object) runtime.Object { return EventFromCore(o.(*v1.Event)) },
		},

		Validate: check(func(e *eventsv1.Event) field.ErrorList {
			return validateEvent(EventToCore(e), false)
		}),
		ValidateUpdate: check2(validateEventV1Update),
		FieldSet:       fieldSet(true, eventV1Fields),
		Table: func(objs []runtime.Object, wide bool) ([]metav1.TableColumnDefinition, [][]interface{}) {
			core := make([]runtime.Object, len(objs))
			for i, o := range objs {
				core[i] = EventToCore(o.(*eventsv1.Event))
			}
			return coreEvents.Table(core, wide)
		},
	}
}

func eventFields(e *v1.Event) fields.Set {
	o := e.InvolvedObject
	return fields.Set{
		"involvedObject.kind":            o.Kind,
		"involvedObject.namespace":       o.Namespace,
		"involvedObject.name":            o.Name,
		"involvedObject.uid":             string(o.UID),
		"involvedObject.apiVersion":      o.APIVersion,
		"involvedObject.resourceVersion": o.ResourceVersion,
		"involvedObject.fieldPath":       o.FieldPath,
		"reason":                         e.Reason,
		"reportingComponent":             e.ReportingController,
		"source":                         eventSource(e.Source, e.ReportingController),
		"type":                           e.Type,
	}
}

// eventV1Fields are upstream's events.k8s.io/v1 field labels (its
// AddFieldLabelConversionsForEvent), each the core field it maps to.
func eventV1Fields(e *eventsv1.Event) fields.Set {
	o := e.Regarding
	return fields.Set{
		"regarding.kind":            o.Kind,
		"regarding.namespace":       o.Namespace,
		"regarding.name":            o.Name,
		"regarding.uid":             string(o.UID),
		"regarding.apiVersion":      o.APIVersion,
		"regarding.resourceVersion": o.ResourceVersion,
		"regarding.fieldPath":       o.FieldPath,
		"reason":                    e.Reason,
		"reportingController":       e.ReportingController,
		"source":                    eventSource(e.DeprecatedSource, e.ReportingController),
		"type":                      e.Type,
	}
}

// eventSource is the "source" field label: the old-style source component,
// else the reporting controller, so new-style events match it too.
func eventSource(s v1.EventSource, reportingController string) string {
	if s.Component != "" {
		return s.Component
	}
	return reportingController
}

// Length limits of new-style event fields.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// validateEvent checks an event; legacy is true for the core/v1 API, which
// only checks new-style fields on events that carry an eventTime, and false
// for events.k8s.io/v1, which requires the new-style fields.
func validateEvent(e *v1.Event, legacy bool) field.ErrorList {
	var errs field.ErrorList
	nsPath := field.NewPath("involvedObject", "namespace")
	controller := field.NewPath("reportingController")
	if legacy {
		controller = field.NewPath("reportingComponent")
	}
	tooLong := func(p string, v string, limit int) {
		if len(v) > limit {
			errs = append(errs, field.Invalid(field.NewPath(p), "", fmt.Sprintf("can have at most %v characters", limit)))
		}
	}
	if e.EventTime.IsZero() {
		// Old-style events: namespaces must agree ("default" tolerated for
		// cluster-scoped objects, for old clients).
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, field.Invalid(nsPath, e.InvolvedObject.Namespace, "does not match event.namespace"))
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(controller, ""))
		}
		errs = append(errs, qualifiedName(e.ReportingController, controller)...)
		if e.ReportingInstance == "" {
			errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
		}
		tooLong("reportingInstance", e.ReportingInstance, reportingInstanceLengthLimit)
		if e.Action == "" {
			errs = append(errs, field.Required(field.NewPath("action"), ""))
		}
		tooLong("action", e.Action, actionLengthLimit)
		if e.Reason == "" {
			errs = append(errs, field.Required(field.NewPath("reason"), ""))
		}
		tooLong("reason", e.Reason, reasonLengthLimit)
		tooLong("message", e.Message, noteLengthLimit)
	}
	errs = append(errs, podspec.InvalidAll(field.NewPath("namespace"), e.Namespace, validation.IsDNS1123Subdomain(e.Namespace))...)
	if legacy {
		return errs
	}

	// Strict checks of the events.k8s.io API.
	errs = append(errs, validateMeta(&e.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)...)
	errs = append(errs, validateEventSeries(e.Series)...)
	if e.EventTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("eventTime"), ""))
	}
	if e.Type != v1.EventTypeNormal && e.Type != v1.EventTypeWarning {
		errs = append(errs, field.Invalid(field.NewPath("type"), "", fmt.Sprintf("has invalid value: %v", e.Type)))
	}
	for _, f := range []struct {
		name  string
		unset bool
	}{
		{"deprecatedFirstTimestamp", e.FirstTimestamp.IsZero()},
		{"deprecatedLastTimestamp", e.LastTimestamp.IsZero()},
		{"deprecatedCount", e.Count == 0},
		{"deprecatedSource", e.Source.Component == "" && e.Source.Host == ""},
	} {
		if !f.unset {
			errs = append(errs, field.Invalid(field.NewPath(f.name), "", "needs to be unset"))
		}
	}
	return errs
}

func validateEventSeries(s *v1.EventSeries) field.ErrorList {
	var errs field.ErrorList
	if s == nil {
		return nil
	}
	if s.Count < 2 {
		errs = append(errs, field.Invalid(field.NewPath("series.count"), "", "should be at least 2"))
	}
	if s.LastObservedTime.IsZero() {
		errs = append(errs, field.Required(field.NewPath("series.lastObservedTime"), ""))
	}
	return errs
}

// validateEventV1Update: through events.k8s.io only the series (and
// metadata) may change.
func validateEventV1Update(e, old *eventsv1.Event) field.ErrorList {
	ce, co := EventToCore(e), EventToCore(old)
	errs := validateEvent(ce, true)
	errs = append(errs, validateMetaUpdate(&ce.ObjectMeta, &co.ObjectMeta)...)
	if !reflect.DeepEqual(ce.Series, co.Series) {
		errs = append(errs, validateEventSeries(ce.Series)...)
	}
	for _, f := range []struct {
		name     string
		new, old interface{}
	}{
		{"involvedObject", ce.InvolvedObject, co.InvolvedObject}, {"reason", ce.Reason, co.Reason},
		{"message", ce.Message, co.Message}, {"source", ce.Source, co.Source},
		{"firstTimestamp", ce.FirstTimestamp, co.FirstTimestamp}, {"lastTimestamp", ce.LastTimestamp, co.LastTimestamp},
		{"count", ce.Count, co.Count}, {"type", ce.Type, co.Type}, {"eventTime", ce.EventTime, co.EventTime},
		{"action", ce.Action, co.Action}, {"related", ce.Related, co.Related},
		{"reportingController", ce.ReportingController, co.ReportingController},
		{"reportingInstance", ce.ReportingInstance, co.ReportingInstance},
	} {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(f.new, f.old, field.NewPath(f.name))...)
	}
	return errs
}

// EventToCore converts an events.k8s.io/v1 Event to its core/v1 form.
func EventToCore(e *eventsv1.Event) *v1.Event {
	out := &v1.Event{
		TypeMeta:            metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:          *e.ObjectMeta.DeepCopy(),
		InvolvedObject:      e.Regarding,
		Reason:              e.Reason,
		Message:             e.Note,
		Source:              e.DeprecatedSource,
		FirstTimestamp:      e.DeprecatedFirstTimestamp,
		LastTimestamp:       e.DeprecatedLastTimestamp,
		Count:               e.DeprecatedCount,
		Type:                e.Type,
		EventTime:           e.EventTime,
		Related:             e.Related.DeepCopy(),
		Action:              e.Action,
		ReportingController: e.ReportingController,
		ReportingInstance:   e.ReportingInstance,
	}
	if e.Series != nil {
		out.Series = &v1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}

// EventFromCore converts a core/v1 Event to its events.k8s.io/v1 form.
func EventFromCore(e *v1.Event) *eventsv1.Event {
	out := &eventsv1.Event{
		TypeMeta:                 metav1.TypeMeta{APIVersion: eventsv1.SchemeGroupVersion.String(), Kind: "Event"},
		ObjectMeta:               *e.ObjectMeta.DeepCopy(),
		EventTime:                e.EventTime,
		ReportingController:      e.ReportingController,
		ReportingInstance:        e.ReportingInstance,
		Action:                   e.Action,
		Reason:                   e.Reason,
		Regarding:                e.InvolvedObject,
		Related:                  e.Related.DeepCopy(),
		Note:                     e.Message,
		Type:                     e.Type,
		DeprecatedSource:         e.Source,
		DeprecatedFirstTimestamp: e.FirstTimestamp,
		DeprecatedLastTimestamp:  e.LastTimestamp,
		DeprecatedCount:          e.Count,
	}
	if e.Series != nil {
		out.Series = &eventsv1.EventSeries{Count: e.Series.Count, LastObservedTime: e.Series.LastObservedTime}
	}
	return out
}
