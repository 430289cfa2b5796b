package podtrace

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	v1 "k8s.io/api/core/v1"
)

// AgentComponent is the component column of the agent's steps.
const AgentComponent = "nodeagent"

// kubeletComponent is the agent's event source, whose events the agent's
// own steps already show.
const kubeletComponent = "kubelet"

// Line is one row of the timeline.
type Line struct {
	// Offset is from the pod's creationTimestamp.
	Offset time.Duration
	// Duration is the step's; 0 for an instant, -1 when not known.
	Duration  time.Duration
	Component string
	Step      string
	Detail    string
	// Coarse: the time is the API's, to the second.
	Coarse bool
	at     time.Time
}

// Timeline merges what the API recorded of the pod (its creation, the
// PodScheduled condition, the events of components other than the agent)
// with the agent's steps, in time order. Without a trace from the agent
// (nil), the agent's events stand in for it.
func Timeline(pod *v1.Pod, events []v1.Event, tr *Trace) []Line {
	origin := pod.CreationTimestamp.Time
	lines := []Line{{Component: "kube-apiserver", Step: "Created", Detail: "creationTimestamp", Coarse: true, at: origin}}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionTrue {
			lines = append(lines, Line{Component: "kube-apiserver", Step: "PodScheduled", Coarse: true, at: c.LastTransitionTime.Time,
				Detail: "condition True, set by the binding (queue wait, scheduling and binding since creation)"})
		}
	}
	for _, e := range events {
		comp := eventComponent(e)
		if comp == kubeletComponent && tr != nil {
			continue
		}
		at, coarse := eventTime(e)
		lines = append(lines, Line{Component: comp, Step: "Event " + e.Reason, Detail: e.Message, Coarse: coarse, at: at})
	}
	if tr != nil {
		for _, s := range tr.Steps {
			lines = append(lines, stepLine(s))
		}
	}
	sort.SliceStable(lines, func(i, j int) bool { return lines[i].at.Before(lines[j].at) })
	for i := range lines {
		lines[i].Offset = lines[i].at.Sub(origin)
		if lines[i].Coarse {
			lines[i].Duration = -1
		}
	}
	return lines
}

func stepLine(s Step) Line {
	name := s.Name
	if s.Container != "" {
		name += " " + s.Container
	}
	detail := s.Detail
	if s.Error != "" {
		detail = strings.TrimSpace(detail + " error: " + s.Error)
	}
	return Line{Duration: s.Duration(), Component: AgentComponent, Step: name, Detail: detail, at: s.Start}
}

func eventComponent(e v1.Event) string {
	if e.ReportingController != "" {
		return e.ReportingController
	}
	return e.Source.Component
}

// eventTime is the event's first occurrence: eventTime (microseconds)
// when set, else firstTimestamp (seconds).
func eventTime(e v1.Event) (time.Time, bool) {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time, false
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time, true
	}
	return e.LastTimestamp.Time, true
}

// Format writes the timeline as a table under a header naming the pod.
func Format(w io.Writer, pod *v1.Pod, lines []Line, tr *Trace) error {
	fmt.Fprintf(w, "pod %s/%s (uid %s) on node %q, created %s\n", pod.Namespace, pod.Name, pod.UID,
		pod.Spec.NodeName, pod.CreationTimestamp.UTC().Format(time.RFC3339))
	fmt.Fprintln(w, "offsets are from creationTimestamp, which the API keeps to the second; API times (~) are to the second too")
	switch {
	case tr == nil:
		fmt.Fprintln(w, "no step log from the agent: its events are shown instead")
	case tr.DroppedSteps > 0:
		fmt.Fprintf(w, "the agent dropped %d later steps (its per-pod bound)\n", tr.DroppedSteps)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OFFSET\tDURATION\tCOMPONENT\tSTEP\tDETAIL")
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", offset(l), duration(l.Duration), l.Component, l.Step, l.Detail)
	}
	return tw.Flush()
}

func offset(l Line) string {
	if l.Coarse {
		return fmt.Sprintf("~%+ds", int64(l.Offset.Round(time.Second)/time.Second))
	}
	return fmt.Sprintf("%+.3fs", l.Offset.Seconds())
}

func duration(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
