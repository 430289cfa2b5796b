// Package podsource is where the pods the agent runs come from. Two sources
// report full snapshots: package file (static pods of the manifest
// directory, as []*v1.Pod) and package api (the pods bound to the node, as
// APIPods). Merger joins the latest snapshot of each into the one desired
// set the pod manager (podworker.Manager) takes, and hands the static pods
// with their mirror pods to the mirror pod manager (apiclient). The sources
// do not know of each other or of the manager; only the merger sees both.
package podsource
