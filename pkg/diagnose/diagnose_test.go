package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

func at(sec int) metav1.Time { return metav1.NewTime(t0.Add(time.Duration(sec) * time.Second)) }

// base is a healthy pod on a Ready node.
func base() Input {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			NodeName:   "n1",
			Containers: []v1.Container{{Name: "app", Image: "registry.local/app:1"}},
		},
		Status: v1.PodStatus{
			Phase: v1.PodRunning, PodIP: "10.0.0.5",
			Conditions: []v1.PodCondition{
				{Type: v1.PodScheduled, Status: v1.ConditionTrue},
				{Type: v1.PodReady, Status: v1.ConditionTrue},
			},
			ContainerStatuses: []v1.ContainerStatus{{
				Name: "app", Ready: true, Started: ptr(true),
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: at(10)}},
			}},
		},
	}
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady"},
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse},
		}},
	}
	return Input{Pod: pod, Node: node}
}

func ptr[T any](v T) *T { return &v }

// event is an event about the pod (container "" for the pod itself).
func event(container, reason, msg string, sec int) v1.Event {
	fp := ""
	if container != "" {
		fp = "spec.containers{" + container + "}"
	}
	return v1.Event{
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "uid-1", FieldPath: fp},
		Reason:         reason, Message: msg, Count: 1, LastTimestamp: at(sec),
		Source: v1.EventSource{Component: "kubelet", Host: "n1"},
	}
}

func unready(in *Input) {
	in.Pod.Status.Conditions[1] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady",
		Message: "containers with unready status: [app]"}
	in.Pod.Status.ContainerStatuses[0].Ready = false
}

func waiting(reason, msg string) func(*Input) {
	return func(in *Input) {
		unready(in)
		in.Pod.Status.Phase = v1.PodPending
		in.Pod.Status.PodIP = ""
		in.Pod.Status.ContainerStatuses[0].Started = ptr(false)
		in.Pod.Status.ContainerStatuses[0].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason, Message: msg}}
	}
}

func unscheduledPod(in *Input) {
	in.Pod.Spec.NodeName = ""
	in.Node = nil
	in.Pod.Status = v1.PodStatus{Phase: v1.PodPending}
}

func unschedulable(msg string) func(*Input) {
	return func(in *Input) {
		unscheduledPod(in)
		in.Pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "Unschedulable", Message: msg}}
		e := event("", "FailedScheduling", msg, 5)
		e.Source = v1.EventSource{Component: "default-scheduler"}
		in.Events = append(in.Events, e)
	}
}

func withClaim(name string, phase v1.PersistentVolumeClaimPhase) func(*Input) {
	return func(in *Input) {
		in.Pod.Spec.Volumes = append(in.Pod.Spec.Volumes, v1.Volume{Name: "data",
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
		if phase != "" {
			if in.Claims == nil {
				in.Claims = map[string]*v1.PersistentVolumeClaim{}
			}
			in.Claims[name] = &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
				Status: v1.PersistentVolumeClaimStatus{Phase: phase}}
		}
	}
}

func claimEvent(name, reason, msg string) func(*Input) {
	return func(in *Input) {
		in.Events = append(in.Events, v1.Event{
			InvolvedObject: v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: "default", Name: name},
			Reason:         reason, Message: msg, Count: 1, LastTimestamp: at(3),
			Source: v1.EventSource{Component: "persistentvolume-controller"},
		})
	}
}

func events(evs ...v1.Event) func(*Input) {
	return func(in *Input) { in.Events = append(in.Events, evs...) }
}

// crashed: the container exited with code and waits in CrashLoopBackOff.
func crashed(code int32, reason string) func(*Input) {
	return func(in *Input) {
		unready(in)
		cs := &in.Pod.Status.ContainerStatuses[0]
		cs.Started = ptr(false)
		cs.RestartCount = 3
		cs.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff",
			Message: "back-off 40s restarting failed container=app pod=web_default(uid-1)"}}
		cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			ExitCode: code, Reason: reason, StartedAt: at(20), FinishedAt: at(30)}}
	}
}

func nodeCond(t v1.NodeConditionType, s v1.ConditionStatus, reason, msg string) func(*Input) {
	return func(in *Input) {
		for i := range in.Node.Status.Conditions {
			if in.Node.Status.Conditions[i].Type == t {
				in.Node.Status.Conditions[i] = v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg}
				return
			}
		}
		in.Node.Status.Conditions = append(in.Node.Status.Conditions, v1.NodeCondition{Type: t, Status: s, Reason: reason, Message: msg})
	}
}

func TestDiagnose(t *testing.T) {
	for _, tc := range []struct {
		name      string
		mutate    []func(*Input)
		component string
		summary   []string // substrings of the summary
		evidence  []string // each a substring of some evidence
	}{
		{
			name:      "healthy",
			component: None,
			summary:   []string{"Pod default/web is Running and Ready on node n1"},
			evidence:  []string{"1/1 containers ready", "0 restarts"},
		},
		{
			name: "healthy on a node under memory pressure: evidence only",
			mutate: []func(*Input){nodeCond(v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory",
				"kubelet has insufficient memory available")},
			component: None,
			summary:   []string{"Running and Ready"},
			evidence:  []string{`node n1 condition MemoryPressure=True KubeletHasInsufficientMemory: "kubelet has insufficient memory available"`},
		},
		{
			name: "Running and Ready between the restarts its liveness probe causes",
			mutate: []func(*Input){func(in *Input) {
				cs := &in.Pod.Status.ContainerStatuses[0]
				cs.RestartCount = 12
				cs.LastTerminationState = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: at(20), FinishedAt: at(22)}}
			}, events(event("app", "Unhealthy", "Liveness probe failed: cat: can't open '/tmp/alive': No such file or directory", 21),
				event("app", "Killing", "Container app failed liveness probe, will be restarted", 21))},
			component: None,
			summary:   []string{"Running and Ready"},
			evidence: []string{"container app restarted 12 times, last state: terminated, exit code 0 (Completed)",
				`event Killing from kubelet: "Container app failed liveness probe, will be restarted"`,
				`event Unhealthy from kubelet: "Liveness probe failed: cat: can't open '/tmp/alive'`},
		},
		{
			name: "unschedulable: the scheduler's per-node reasons and the pod's request",
			mutate: []func(*Input){unschedulable("0/3 nodes are available: 3 Insufficient cpu."), func(in *Input) {
				in.Pod.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100")}
			}},
			component: Scheduler,
			summary:   []string{"Pod default/web is Pending: the scheduler found no node that fits it"},
			evidence:  []string{`event FailedScheduling from default-scheduler: "0/3 nodes are available: 3 Insufficient cpu."`, "the pod requests cpu: 100"},
		},
		{
			name: "unschedulable: the condition alone (events expired)",
			mutate: []func(*Input){unschedulable("0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }."),
				func(in *Input) { in.Events = nil }},
			component: Scheduler,
			summary:   []string{"found no node"},
			evidence:  []string{`condition PodScheduled=False Unschedulable: "0/1 nodes are available: 1 node(s) had untolerated taint`},
		},
		{
			name: "scheduling gates",
			mutate: []func(*Input){unscheduledPod, func(in *Input) {
				in.Pod.Spec.SchedulingGates = []v1.PodSchedulingGate{{Name: "example.com/quota"}}
				in.Pod.Status.Conditions = []v1.PodCondition{{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: "SchedulingGated", Message: "Scheduling is blocked due to non-empty scheduling gates"}}
			}},
			component: Scheduler,
			summary:   []string{"waits for its scheduling gates to be removed (example.com/quota)"},
			evidence:  []string{"SchedulingGated"},
		},
		{
			name:      "no attempt yet",
			mutate:    []func(*Input){unscheduledPod},
			component: Scheduler,
			summary:   []string{"waits for the scheduler, which has recorded no attempt yet"},
		},
		{
			name:      "another scheduler's pod",
			mutate:    []func(*Input){unscheduledPod, func(in *Input) { in.Pod.Spec.SchedulerName = "my-scheduler" }},
			component: Scheduler,
			summary:   []string{`waits for scheduler "my-scheduler"`},
		},
		{
			name: "unbound claim",
			mutate: []func(*Input){unschedulable("0/1 nodes are available: pod has unbound immediate PersistentVolumeClaims."),
				withClaim("data", v1.ClaimPending),
				claimEvent("data", "FailedBinding", "no persistent volumes available for this claim and no storage class is set")},
			component: Scheduler,
			summary:   []string{`waits for its PersistentVolumeClaim "data", which is not bound to a volume (Pending)`},
			evidence: []string{"claim data phase Pending",
				`claim event FailedBinding from persistentvolume-controller: "no persistent volumes available for this claim and no storage class is set"`,
				"pod has unbound immediate PersistentVolumeClaims"},
		},
		{
			name:      "missing claim",
			mutate:    []func(*Input){unschedulable(`0/1 nodes are available: persistentvolumeclaim "data" not found.`), withClaim("data", "")},
			component: Scheduler,
			summary:   []string{`its PersistentVolumeClaim "data" does not exist`},
			evidence:  []string{`persistentvolumeclaim \"data\" not found`},
		},
		{
			name: "a claim waiting for its first consumer is not the cause",
			mutate: []func(*Input){unschedulable("0/1 nodes are available: 1 node(s) didn't find available persistent volumes to bind."),
				withClaim("data", v1.ClaimPending), claimEvent("data", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")},
			component: Scheduler,
			summary:   []string{"found no node that fits it"},
			evidence:  []string{"didn't find available persistent volumes to bind"},
		},
		{
			name: "failed mount",
			mutate: []func(*Input){waiting("ContainerCreating", ""),
				events(event("", "Scheduled", "Successfully assigned default/web to n1", 1),
					event("", "FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found`, 4))},
			component: Kubelet,
			summary:   []string{"Pod default/web is Pending (ContainerCreating): the kubelet on node n1 cannot mount its volumes"},
			evidence:  []string{`event FailedMount from kubelet: "MountVolume.SetUp failed for volume \"cfg\" : configmap \"settings\" not found"`},
		},
		{
			name: "a failed mount the kubelet got past is not the cause",
			mutate: []func(*Input){waiting("ContainerCreating", ""),
				events(event("", "FailedMount", `MountVolume.SetUp failed for volume "cfg" : configmap "settings" not found`, 4),
					event("app", "Pulling", `Pulling image "registry.local/app:1"`, 6))},
			component: Kubelet,
			summary:   []string{"is still setting it up, with no failure reported"},
			evidence:  []string{`last event Pulling from kubelet: "Pulling image \"registry.local/app:1\""`},
		},
		{
			name: "pod network not ready",
			mutate: []func(*Input){waiting("ContainerCreating", ""),
				events(event("", "NetworkNotReady", "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized", 4))},
			component: Kubelet,
			summary:   []string{"waits for the pod network, which is not ready"},
			evidence:  []string{"NetworkPluginNotReady"},
		},
		{
			name: "sandbox creation failed",
			mutate: []func(*Input){waiting("ContainerCreating", ""),
				events(event("", "FailedCreatePodSandBox", `Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "abc": plugin type="bridge" failed (add): failed to allocate for range 0`, 4))},
			component: Kubelet,
			summary:   []string{"cannot create its sandbox"},
			evidence:  []string{"failed to allocate for range 0"},
		},
		{
			name: "missing configMap in the environment",
			mutate: []func(*Input){waiting("CreateContainerConfigError", `configmap "settings" not found`),
				events(event("app", "Failed", `Error: configmap "settings" not found`, 4))},
			component: Kubelet,
			summary:   []string{`Pod default/web is Pending (CreateContainerConfigError): the kubelet on node n1 cannot start container app: configmap "settings" not found`},
			evidence:  []string{`container app waiting: CreateContainerConfigError "configmap \"settings\" not found"`},
		},
		{
			name: "image pull failed: the registry's answer",
			mutate: []func(*Input){waiting("ErrImagePull", `failed to pull and unpack image "registry.local/app:1": failed to resolve reference "registry.local/app:1": registry.local/app:1: not found`),
				events(event("app", "Pulling", `Pulling image "registry.local/app:1"`, 3),
					event("app", "Failed", `Failed to pull image "registry.local/app:1": failed to resolve reference "registry.local/app:1": registry.local/app:1: not found`, 4),
					event("app", "Failed", "Error: ErrImagePull", 4))},
			component: Kubelet,
			summary:   []string{`Pod default/web is Pending (ErrImagePull): the kubelet on node n1 cannot pull image "registry.local/app:1" for container app`},
			evidence:  []string{`event Failed from kubelet: "Failed to pull image \"registry.local/app:1\": failed to resolve reference`},
		},
		{
			name: "image pull back-off",
			mutate: []func(*Input){waiting("ImagePullBackOff", `Back-off pulling image "registry.local/app:1": ErrImagePull: 401 Unauthorized`),
				events(event("app", "Failed", `Failed to pull image "registry.local/app:1": 401 Unauthorized`, 4),
					event("app", "BackOff", `Back-off pulling image "registry.local/app:1"`, 8))},
			component: Kubelet,
			summary:   []string{"(ImagePullBackOff)", `cannot pull image "registry.local/app:1"`},
			evidence:  []string{"container app waiting: ImagePullBackOff", `event Failed from kubelet: "Failed to pull image \"registry.local/app:1\": 401 Unauthorized"`},
		},
		{
			name: "crash loop: exit code and the previous logs",
			mutate: []func(*Input){crashed(3, "Error"), func(in *Input) {
				in.PreviousLogs = map[string][]string{"app": {"starting", "fatal: no database"}}
			}, events(event("app", "BackOff", "Back-off restarting failed container app in pod web_default(uid-1)", 31))},
			component: Kubelet,
			summary:   []string{"Pod default/web is Running (CrashLoopBackOff): container app keeps exiting with code 3; the kubelet on node n1 restarts it with back-off (3 restarts so far)"},
			evidence: []string{"last state: terminated, exit code 3 (Error)",
				`last lines of logs --previous: "starting" / "fatal: no database"`,
				"container app waiting: CrashLoopBackOff"},
		},
		{
			name: "crash loop: OOMKilled",
			mutate: []func(*Input){crashed(137, "OOMKilled"), func(in *Input) {
				in.Pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
			}},
			component: Kubelet,
			summary:   []string{"container app was OOMKilled (its memory limit is 64Mi)"},
			evidence:  []string{"exit code 137 (OOMKilled)"},
		},
		{
			name: "crash loop: killed by its liveness probe",
			mutate: []func(*Input){crashed(137, "Error"), events(
				event("app", "Unhealthy", "Liveness probe failed: HTTP probe failed with statuscode: 500", 27),
				event("app", "Killing", "Container app failed liveness probe, will be restarted", 28))},
			component: Kubelet,
			summary:   []string{"container app is killed for failing its liveness probe"},
			evidence: []string{`event Killing from kubelet: "Container app failed liveness probe, will be restarted"`,
				`event Unhealthy from kubelet: "Liveness probe failed: HTTP probe failed with statuscode: 500"`},
		},
		{
			name: "crash loop: a liveness kill of an earlier instance is not the cause",
			mutate: []func(*Input){crashed(2, "Error"), events(
				event("app", "Killing", "Container app failed liveness probe, will be restarted", 5))},
			component: Kubelet,
			summary:   []string{"keeps exiting with code 2"},
		},
		{
			name: "readiness probe failing",
			mutate: []func(*Input){unready, func(in *Input) {
				in.Pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}}
			}, events(event("app", "Unhealthy", "Readiness probe failed: cat: can't open '/tmp/ready': No such file or directory", 12))},
			component: Kubelet,
			summary:   []string{"Pod default/web is Running but not Ready: the readiness probe of container app fails"},
			evidence:  []string{`event Unhealthy from kubelet: "Readiness probe failed: cat: can't open '/tmp/ready': No such file or directory"`},
		},
		{
			name: "readiness probe not run yet",
			mutate: []func(*Input){unready, func(in *Input) {
				in.Pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{InitialDelaySeconds: 30, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			}},
			component: Kubelet,
			summary:   []string{"the readiness probe of container app has not succeeded yet"},
			evidence:  []string{"readiness probe initialDelaySeconds 30"},
		},
		{
			name: "startup probe failing",
			mutate: []func(*Input){unready, func(in *Input) {
				in.Pod.Status.ContainerStatuses[0].Started = ptr(false)
				in.Pod.Spec.Containers[0].StartupProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}}
				in.Pod.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			}, events(event("app", "Unhealthy", "Startup probe failed: ", 12))},
			component: Kubelet,
			summary:   []string{"the startup probe of container app fails"},
		},
		{
			name: "node NotReady: the kubelet stopped reporting",
			mutate: []func(*Input){crashed(1, "Error"), nodeCond(v1.NodeReady, v1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."),
				func(in *Input) {
					in.Node.Spec.Taints = []v1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute}}
				}},
			component: Node,
			summary:   []string{"its node n1 is NotReady (its kubelet stopped reporting)"},
			evidence: []string{`node n1 condition Ready=Unknown NodeStatusUnknown: "Kubelet stopped posting node status."`,
				"taint node.kubernetes.io/unreachable:NoExecute"},
		},
		{
			name:      "node NotReady: the kubelet says why",
			mutate:    []func(*Input){waiting("ContainerCreating", ""), nodeCond(v1.NodeReady, v1.ConditionFalse, "KubeletNotReady", "container runtime network not ready: NetworkReady=false")},
			component: Node,
			summary:   []string{"its node n1 is NotReady,"},
			evidence:  []string{"KubeletNotReady"},
		},
		{
			name:      "node missing",
			mutate:    []func(*Input){func(in *Input) { in.Node = nil }},
			component: Node,
			summary:   []string{"bound to node n1, which does not exist"},
		},
		{
			name: "not Ready on a node under disk pressure, nothing else found",
			mutate: []func(*Input){func(in *Input) {
				in.Pod.Status.Conditions[1] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse}
			}, nodeCond(v1.NodeDiskPressure, v1.ConditionTrue, "KubeletHasDiskPressure", "kubelet has disk pressure")},
			component: Node,
			summary:   []string{"its node n1 is under pressure"},
			evidence:  []string{"DiskPressure=True KubeletHasDiskPressure"},
		},
		{
			name: "crash loop on a node under memory pressure: both",
			mutate: []func(*Input){crashed(1, "Error"),
				nodeCond(v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory", "kubelet has insufficient memory available")},
			component: Kubelet,
			summary:   []string{"keeps exiting with code 1"},
			evidence:  []string{"MemoryPressure=True"},
		},
		{
			name: "init container running",
			mutate: []func(*Input){func(in *Input) {
				in.Pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox"}}
				in.Pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "setup", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
			}, waiting("PodInitializing", "")},
			component: Kubelet,
			summary:   []string{"Pod default/web is Pending (PodInitializing): init container setup is still running"},
		},
		{
			name: "init container crash loop before the containers",
			mutate: []func(*Input){waiting("PodInitializing", ""), func(in *Input) {
				in.Pod.Spec.InitContainers = []v1.Container{{Name: "setup", Image: "busybox"}}
				in.Pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "setup", RestartCount: 2,
					State:                v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 7, Reason: "Error"}}}}
				in.PreviousLogs = map[string][]string{"setup": {"migration failed"}}
			}},
			component: Kubelet,
			summary:   []string{"init container setup keeps exiting with code 7"},
			evidence:  []string{`"migration failed"`},
		},
		{
			name: "terminating",
			mutate: []func(*Input){func(in *Input) {
				ts := at(50)
				in.Pod.DeletionTimestamp, in.Pod.DeletionGracePeriodSeconds = &ts, ptr(int64(30))
			}, events(event("app", "Killing", "Stopping container app", 20))},
			component: Kubelet,
			summary:   []string{"Pod default/web is Running (Terminating): it is being deleted with a grace period of 30s"},
			evidence:  []string{`event Killing from kubelet: "Stopping container app"`},
		},
		{
			name: "a container that exited and is not restarted",
			mutate: []func(*Input){unready, func(in *Input) {
				in.Pod.Spec.RestartPolicy = v1.RestartPolicyOnFailure
				in.Pod.Spec.Containers = append(in.Pod.Spec.Containers, v1.Container{Name: "job"})
				in.Pod.Status.ContainerStatuses[0].Ready = true
				in.Pod.Status.ContainerStatuses = append(in.Pod.Status.ContainerStatuses, v1.ContainerStatus{Name: "job",
					State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
			}},
			component: Kubelet,
			summary:   []string{"Pod default/web is Running (Completed): container job has terminated with exit code 0 and it is not restarted (restartPolicy OnFailure)"},
			evidence:  []string{"container job terminated: exit code 0 (Completed)"},
		},
		{
			name: "evicted",
			mutate: []func(*Input){func(in *Input) {
				in.Pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}
			}},
			component: Kubelet,
			summary:   []string{"has failed: the kubelet on node n1 set it Failed (Evicted)"},
			evidence:  []string{`status reason Evicted: "The node was low on resource: memory."`},
		},
		{
			name: "completed",
			mutate: []func(*Input){func(in *Input) {
				in.Pod.Status.Phase = v1.PodSucceeded
				in.Pod.Status.ContainerStatuses[0].State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
			}},
			component: None,
			summary:   []string{"has completed"},
			evidence:  []string{"container app terminated: exit code 0 (Completed)"},
		},
		{
			name: "readiness gate not set",
			mutate: []func(*Input){func(in *Input) {
				in.Pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/lb"}}
				in.Pod.Status.Conditions[1] = v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady",
					Message: `corresponding condition of pod readiness gate "example.com/lb" does not exist.`}
			}},
			component: ReadinessGate,
			summary:   []string{"readiness gate example.com/lb is not True"},
			evidence:  []string{"ReadinessGatesNotReady"},
		},
		{
			name: "events of an earlier pod of the same name are not this pod's",
			mutate: []func(*Input){waiting("ContainerCreating", ""), func(in *Input) {
				e := event("", "FailedMount", "MountVolume.SetUp failed", 4)
				e.InvolvedObject.UID = "uid-0"
				in.Events = append(in.Events, e)
			}},
			component: Kubelet,
			summary:   []string{"still setting it up"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := base()
			for _, m := range tc.mutate {
				m(&in)
			}
			d := Diagnose(in)
			if d.Component != tc.component {
				t.Errorf("component %q, want %q", d.Component, tc.component)
			}
			for _, s := range tc.summary {
				if !strings.Contains(d.Summary, s) {
					t.Errorf("summary %q lacks %q", d.Summary, s)
				}
			}
			for _, s := range tc.evidence {
				if !slices.ContainsFunc(d.Evidence, func(e string) bool { return strings.Contains(e, s) }) {
					t.Errorf("no evidence with %q in %q", s, d.Evidence)
				}
			}
			if t.Failed() || testing.Verbose() {
				t.Logf("paragraph: %s", d.Paragraph())
			}
		})
	}
}

func TestParagraph(t *testing.T) {
	d := Diagnosis{Summary: "Pod default/web is Pending: the scheduler found no node that fits it",
		Evidence: []string{`event FailedScheduling: "0/1 nodes are available: 1 Insufficient cpu."`, "the pod requests cpu: 100"}}
	want := `Pod default/web is Pending: the scheduler found no node that fits it. Evidence: event FailedScheduling: "0/1 nodes are available: 1 Insufficient cpu."; the pod requests cpu: 100.`
	if got := d.Paragraph(); got != want {
		t.Errorf("Paragraph:\n got %s\nwant %s", got, want)
	}
	if got := (Diagnosis{Summary: "Pod default/web is Running and Ready on node n1"}).Paragraph(); got != "Pod default/web is Running and Ready on node n1." {
		t.Errorf("Paragraph without evidence: %q", got)
	}
}

func TestClaimNamesAndRestartedContainers(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{Volumes: []v1.Volume{
			{Name: "a", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
			{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}},
			{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		}},
		Status: v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}},
			ContainerStatuses: []v1.ContainerStatus{{Name: "fresh"},
				{Name: "app", LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}},
		},
	}
	if got := ClaimNames(pod); !slices.Equal(got, []string{"data", "web-scratch"}) {
		t.Errorf("ClaimNames = %q", got)
	}
	if got := RestartedContainers(pod); !slices.Equal(got, []string{"init", "app"}) {
		t.Errorf("RestartedContainers = %q", got)
	}
}
