// Package podutil holds the pod conventions that the agent's pod sources,
// its pod workers, its probes and the control plane share: the kubelet's
// config.* annotations, what makes a container a sidecar, and how a
// container is found by name. One place, so that a source and its readers
// cannot drift apart.
package podutil
