// Package podworker owns the lifecycle of every pod on the node: one worker
// goroutine per pod UID moves the pod through syncing, terminating and
// terminated.
//
// Each sync reads the runtime's view of the pod, asks the pure planner
// ComputePodActions what to do (create the sandbox, start or kill
// containers, wait out a back-off), runs that plan against the CRI, and
// regenerates the pod's API status from what the runtime then reports.
// The planner and the status generator take everything as arguments, so
// both are unit-tested with tables; the executor is tested end to end.
// What the CRI is asked for (sandbox and container configs) is
// translated from the pod by the pure package criconfig.
package podworker
