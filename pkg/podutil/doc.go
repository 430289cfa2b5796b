// Package podutil holds the pod conventions that the agent's pod sources,
// its pod workers, its probes and the control plane share: the kubelet's
// config.* annotations and what makes a container a sidecar. One place, so
// that a source and its readers cannot drift apart.
package podutil
