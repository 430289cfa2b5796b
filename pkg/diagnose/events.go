package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// eventList is events sorted oldest first by when they last happened.
type eventList []v1.Event

func sortEvents(in []v1.Event) eventList {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b v1.Event) int { return eventTime(&a).Compare(eventTime(&b)) })
	return out
}

// eventTime is when an event last happened: the series' last
// observation, lastTimestamp, eventTime, firstTimestamp, then its
// creation, whichever the recorder set (core/v1 and events.k8s.io
// recorders set different ones).
func eventTime(e *v1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

// latest is the last event that matches.
func (l eventList) latest(match func(*v1.Event) bool) *v1.Event {
	for i := len(l) - 1; i >= 0; i-- {
		if match(&l[i]) {
			return &l[i]
		}
	}
	return nil
}

// after reports whether some event that matches happened after e.
func (l eventList) after(e *v1.Event, match func(*v1.Event) bool) bool {
	t := eventTime(e)
	for i := range l {
		if &l[i] != e && match(&l[i]) && eventTime(&l[i]).After(t) {
			return true
		}
	}
	return false
}

// podLevel matches the pod's own events (no container) of the reasons.
func (c *check) podLevel(reasons ...string) func(*v1.Event) bool {
	return func(e *v1.Event) bool {
		return c.aboutPod(e) && e.InvolvedObject.FieldPath == "" && slices.Contains(reasons, e.Reason)
	}
}

// ofContainer matches the events about container name of the reasons
// (any reason if none).
func (c *check) ofContainer(name string, reasons ...string) func(*v1.Event) bool {
	return func(e *v1.Event) bool {
		return c.aboutPod(e) && containerOf(e.InvolvedObject.FieldPath) == name &&
			(len(reasons) == 0 || slices.Contains(reasons, e.Reason))
	}
}

// anyContainer matches the events about any of the pod's containers of
// the reasons (any reason if none).
func (c *check) anyContainer(reasons ...string) func(*v1.Event) bool {
	return func(e *v1.Event) bool {
		return c.aboutPod(e) && containerOf(e.InvolvedObject.FieldPath) != "" &&
			(len(reasons) == 0 || slices.Contains(reasons, e.Reason))
	}
}

// ofClaim matches the events about the named claim.
func (c *check) ofClaim(name string) func(*v1.Event) bool {
	return func(e *v1.Event) bool {
		o := e.InvolvedObject
		return o.Kind == "PersistentVolumeClaim" && o.Name == name && o.Namespace == c.pod.Namespace
	}
}

// aboutPod: the event's object is this pod (by UID when both have one:
// a pod of the same name before it is another pod).
func (c *check) aboutPod(e *v1.Event) bool {
	o := e.InvolvedObject
	if o.Kind != "Pod" || o.Name != c.pod.Name || o.Namespace != c.pod.Namespace {
		return false
	}
	return o.UID == "" || c.pod.UID == "" || o.UID == c.pod.UID
}

// containerOf is the container a field path such as
// "spec.containers{app}" names, "" for none.
func containerOf(fieldPath string) string {
	for _, prefix := range []string{"spec.containers{", "spec.initContainers{", "spec.ephemeralContainers{"} {
		if rest, ok := strings.CutPrefix(fieldPath, prefix); ok {
			return strings.TrimSuffix(rest, "}")
		}
	}
	return ""
}

// describeEvent is an event as evidence: its reason, how often it
// happened and its message.
func describeEvent(e *v1.Event) string {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	s := "event " + e.Reason
	if n > 1 {
		s += fmt.Sprintf(" (x%d)", n)
	}
	if src := eventSource(e); src != "" {
		s += " from " + src
	}
	// Probe output ends in a newline.
	return s + fmt.Sprintf(": %q", strings.TrimSpace(e.Message))
}

func eventSource(e *v1.Event) string {
	switch {
	case e.Source.Component != "":
		return e.Source.Component
	case e.ReportingController != "":
		return e.ReportingController
	}
	return ""
}
