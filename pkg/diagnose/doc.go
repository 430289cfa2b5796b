// Package diagnose says, in one paragraph, which component holds a pod
// that is not Running and Ready and why, with the evidence: the
// troubleshooting playbook (kubectl describe, get events, logs --previous,
// describe node) read by a program.
//
// Diagnose is pure: it reads what the caller fetched from the API (the
// pod, the events about it and its claims, its node, the claims it names,
// the last lines of each restarted container's previous log) and returns a
// Diagnosis. The words it recognises are the ones the components write:
// the scheduler's FailedScheduling event and PodScheduled condition
// ("0/3 nodes are available: 3 Insufficient cpu."), the persistent volume
// binder's claim events, the kubelet's waiting reasons (ErrImagePull,
// ImagePullBackOff, CreateContainerConfigError, CrashLoopBackOff, ...) and
// events (Failed, FailedMount, FailedCreatePodSandBox, NetworkNotReady,
// Unhealthy, Killing), and the node's conditions (Ready, MemoryPressure,
// DiskPressure, PIDPressure, NetworkUnavailable).
//
// The checks run in the order a pod moves through the system, and the
// first that explains the pod wins: deleted or finished; not scheduled
// (scheduling gates, claims, the scheduler's message); its node missing or
// not Ready; its containers, init containers first (image, configuration,
// crash loop, startup and readiness probes); the pod-level steps before any
// container (sandbox, pod network, volumes); readiness gates. A node under
// pressure is added to whatever else is found.
//
// Use:
//
//	in := diagnose.Input{Pod: pod, Events: events, Node: node}
//	// fetch in.Claims for diagnose.ClaimNames(pod) and in.PreviousLogs
//	// for diagnose.RestartedContainers(pod)
//	fmt.Println(diagnose.Diagnose(in).Paragraph())
package diagnose
