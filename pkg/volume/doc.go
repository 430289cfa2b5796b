// Package volume mounts pod volumes the kubelet's way: one plugin per
// volume type (emptyDir, hostPath, configMap, secret, downwardAPI,
// projected, persistentVolumeClaim), each setting a volume up in the pod's
// volume directory <root>/pods/<uid>/volumes/<plugin>/<name> (plugin names
// escaped as upstream: "kubernetes.io~empty-dir") before the pod's
// containers start, and tearing it down after they stopped.
//
// Data volumes (configMap, secret, downwardAPI, projected) are written with
// an atomic writer (timestamped directory, "..data" symlink swapped in one
// rename), so a container never sees half an update; SetUp is idempotent
// and called again on every sync to propagate updates. Secrets and
// projected volumes live on a per-volume tmpfs, never on disk.
//
// The Manager is stateless: the pod worker asks it to set a pod's volumes
// up on every sync (SetUpPod, idempotent) and to tear them down once the
// pod's containers are gone (TearDownPod); what is mounted is read from the
// pod's volume directory each time, never remembered. CleanupOrphans
// removes the directories of pods that no longer exist, after an agent
// restart too (mounted volumes of running pods are found on disk, not
// mounted again).
package volume
