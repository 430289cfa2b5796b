// Package apiclient is the agent's side of the Kubernetes API, on
// client-go and standard API behaviour only, so that the agent joins the
// bundled control plane and a real kube-apiserver alike:
//
//   - NodeStatus registers the Node and reports its status (conditions,
//     capacity, node info) on change and at least every report period;
//   - NodeWatch watches the Node, whose labels and taints admission checks;
//   - ServiceWatch watches every namespace's services, for the containers'
//     service environment variables (KUBERNETES_SERVICE_HOST, ...);
//   - RuntimeClassWatch watches the RuntimeClasses, whose handlers pods'
//     sandboxes run with;
//   - Lease renews the node's coordination.k8s.io Lease in kube-node-lease;
//   - StatusManager sends pod statuses to pods/status (strategic merge
//     patches from the last known copy, a few pods at once, the latest
//     status of a pod wins) and confirms deletions (grace period 0, UID
//     precondition);
//   - MirrorManager keeps a mirror pod in the API for every static pod;
//   - NewEventRecorder records events as component "kubelet".
//
// The pod source of the API and the merger of pod sources are in
// pkg/podsource. API assembles all of them, since the pod source must wait
// for the Node's registration and the merger feeds the MirrorManager: build
// it with New, pass its Watch.Node, Services, Runtimes, OnStatus, OnTerminated
// and Events to podworker.Config, and run it with the static pod channel in and the
// merged channel out:
//
//	clients, err := apiclient.NewClients(rc, limits) // main, status, events, heartbeat
//	api, err := apiclient.New(apiclient.Config{Clients: clients, NodeName: n, Runtime: rt, ...})
//	mgr, err := podworker.New(podworker.Config{..., Events: api.Events(),
//		Node: api.Watch.Node, Services: api.Services, RuntimeClasses: api.Runtimes,
//		OnStatus: api.OnStatus, OnTerminated: api.OnTerminated})
//	go api.Run(ctx, staticPods, merged)
//	go mgr.Run(ctx, merged, plegEvents)
//
// Every component has Run(ctx) error and stops when ctx ends.
package apiclient
