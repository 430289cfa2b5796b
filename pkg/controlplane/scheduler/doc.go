// Package scheduler assigns pending pods to nodes, with the upstream
// kube-scheduler's semantics where users rely on them.
//
// It watches, through shared informers, the pods that are not terminated
// (the upstream filter status.phase!=Succeeded,status.phase!=Failed) and
// the nodes. Pods without spec.nodeName whose spec.schedulerName is ours
// (default "default-scheduler") and that have no scheduling gates enter a
// work queue; pods bound to a node are accounted on that node.
//
// One scheduling cycle at a time, as upstream:
//
//  1. Check the pod's PersistentVolumeClaims (upstream's VolumeBinding
//     PreFilter): a missing, lost or deleted claim, or an unbound claim of
//     Immediate binding, makes the pod unschedulable everywhere
//     ("0/2 nodes are available: pod has unbound immediate
//     PersistentVolumeClaims."). Then filter every node with pure
//     functions, in upstream order: NodeUnschedulable, TaintToleration,
//     NodeReady, NodeAffinity, NodePorts, NodeResourcesFit,
//     VolumeRestrictions (ReadWriteOncePod claims in use), VolumeBinding
//     (bound volumes' node affinity, "node(s) had volume node affinity
//     conflict"; a free volume on the node for each WaitForFirstConsumer
//     claim), PodTopologySpread (the pod's whenUnsatisfiable: DoNotSchedule
//     constraints: maxSkew over the domains of the eligible nodes,
//     minDomains, matchLabelKeys, the node inclusion policies),
//     InterPodAffinity.
//  2. Score the feasible nodes (LeastAllocated, BalancedAllocation,
//     preferred NodeAffinity, TaintToleration PreferNoSchedule and the
//     spreading of pods of the same controller, or, for a pod with
//     ScheduleAnyway topology spread constraints, upstream's
//     PodTopologySpread score instead), each normalised to 0-100 and
//     weighted as upstream's defaults; ties are broken at random.
//  3. Pre-bind the volumes chosen for WaitForFirstConsumer claims
//     (spec.claimRef) and wait for the PersistentVolume binder to bind the
//     claims; then bind with POST pods/binding and record a "Scheduled"
//     event.
//
// A pod that fits nowhere gets a "FailedScheduling" event and the
// PodScheduled=False condition (reason Unschedulable) with upstream's
// message, "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) had
// untolerated taint {node.kubernetes.io/not-ready: }.". Preemption is not
// implemented, so the message ends there. The pod waits until a node, a
// pod, a claim, a volume or a storage class changes, with a per-pod exponential backoff (1s to 10s), and is
// retried at least every 60s.
//
// With Config.Metrics, every attempt is counted as kube-scheduler counts
// it: scheduler_schedule_attempts_total and
// scheduler_scheduling_attempt_duration_seconds by result (scheduled,
// unschedulable, error) and profile (the scheduler name); a scheduled
// attempt ends when its binding does.
//
// Use:
//
//	s, err := scheduler.New(scheduler.Config{Client: clientset, Logger: log})
//	if err != nil { ... }
//	err = s.Run(ctx) // returns nil when ctx ends
package scheduler
