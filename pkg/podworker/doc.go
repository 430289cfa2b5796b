// Package podworker owns the lifecycle of every pod on the node: one worker
// goroutine per pod UID moves the pod through syncing, terminating and
// terminated.
//
// Each sync reads the runtime's view of the pod, asks the pure planner
// ComputePodActions what to do (create the sandbox, start or kill
// containers, wait out a back-off), sets the pod's volumes up when the
// plan makes the sandbox or starts a container (before the runtime acts,
// as the kubelet's SyncPod), runs that plan against the CRI, and
// regenerates the pod's API status from what the runtime then reports.
// The first sync of a pod the runtime never held (the manager lists the
// runtime's pods before it starts any worker) starts from an empty view
// without asking, as the kubelet's pod cache answers for it.
// The planner and the status generator take everything as arguments, so
// both are unit-tested with tables; the executor is tested end to end.
// What the CRI is asked for (sandbox and container configs) is
// translated from the pod by the pure package criconfig.
//
// In-place resize (resize.go): a worker runs its pod with the resources
// the node admitted (the allocation, checkpointed in the pod's
// directory). DecideResize admits a changed spec or holds it back
// (PodResizePending: Infeasible, Deferred); ComputeResizeActions says
// which running containers are updated in place (UpdateContainerResources)
// and which restart (resizePolicy RestartContainer).
//
// Container garbage collection (gc.go, gc_run.go) is the kubelet's
// containerGC: the pure PlanGC decides from the runtime's containers and
// sandboxes, the pod log directories and what the manager knows of each
// pod (GCPodState) what goes; the manager runs it every
// ContainerGCPeriod, the eviction manager through CollectAllGarbage
// (evictNonDeletedPods), and each sync over its own pod.
package podworker
