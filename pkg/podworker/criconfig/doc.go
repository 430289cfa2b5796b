// Package criconfig translates a pod, with the facts of the node it runs
// on, into the CRI messages that create its sandbox and its containers:
// metadata, the kubelet's labels and annotations, DNS, namespaces,
// security contexts, resources, environment and mounts.
//
// Everything here is a function of its arguments (reading a resolv.conf
// or preparing a subPath aside), so each CRI field is covered by table
// tests; the pod worker gathers the inputs and calls the runtime.
package criconfig
