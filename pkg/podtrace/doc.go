// Package podtrace keeps and shows where a pod's start went: the agent's
// per-pod step log (Log: what the pod worker did and when, bounded per pod
// and in pods, dropped a while after the pod is gone), served as JSON on
// the node API, optionally exported as OpenTelemetry spans (OTLP, the
// kubelet's tracing configuration), and the timeline `nodeagent trace pod`
// prints (Timeline: a pure function of the API pod, its events and the
// agent's steps).
//
// The steps are recorded by the components that did the work, at the time
// they did it; the API's own times (creationTimestamp, conditions, event
// timestamps) have one-second precision, and the timeline says so rather
// than guessing finer ones.
package podtrace
