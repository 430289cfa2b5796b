// Package lifecycle runs containers' postStart and preStop hooks (exec,
// httpGet, sleep) as the kubelet's handler runner does, and returns the
// kubelet's messages for the FailedPostStartHook and FailedPreStopHook
// events. The pod worker decides when to run them and what a failure means.
package lifecycle
