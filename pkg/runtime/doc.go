// Package runtime is the agent's side of the CRI: a gRPC client for the
// runtime and image services with a timeout on every call, the kubelet's
// label and annotation conventions (io.kubernetes.*) that let crictl and a
// restarted agent recognise pods, the /var/log/pods layout, container spec
// hashing, per-pod runtime snapshots and a relist-based PLEG.
//
// Nothing here knows about pod lifecycles: pkg/podworker decides, this
// package only talks to the runtime and translates.
package runtime
