// Package objectmanager is the kubelet's configMap and secret managers:
// what the node's pods read of their config maps and secrets (volumes,
// env, image pull secrets) comes from here instead of one GET per read.
//
// The strategy is KubeletConfiguration configMapAndSecretChangeDetectionStrategy:
//
//   - Watch (the default): one list/watch per referenced object
//     (fieldSelector metadata.name=NAME), shared by the pods that refer to
//     it and stopped when none does. Get answers from the watch's store,
//     waiting up to a second for its first list. A watch not read for five
//     sync periods (at least a minute) is stopped until the next Get, and
//     an object seen immutable is not watched any more.
//   - Cache: each object is fetched at most once per TTL (the node's
//     node.alpha.kubernetes.io/ttl annotation, else a minute), and again
//     after a pod that refers to it is registered.
//   - Get: a GET per read.
//
// The pod workers call RegisterPod on every sync of a pod that is not
// terminating and UnregisterPod once it has terminated and its volumes are
// gone, as the kubelet's SyncPod and SyncTerminatedPod do; Get of an
// object no registered pod refers to fails (Watch, Cache). Run stops the
// idle watches and, when its context ends, every watch.
//
//	m, err := objectmanager.New(objectmanager.Config{Client: cs, Strategy: objectmanager.Watch, ResyncPeriod: time.Minute})
//	go m.Run(ctx)
//	m.RegisterPod(pod)
//	cm, err := m.GetConfigMap(ctx, pod.Namespace, "app-config")
package objectmanager
