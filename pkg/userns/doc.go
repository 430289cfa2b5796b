// Package userns allocates the user namespace ID mappings of pods with
// hostUsers: false, as the kubelet's user namespace manager does: the
// node's ID range (the `kubelet` user's subordinate IDs, else every ID
// from idsPerPod up) is cut into blocks of idsPerPod IDs; each pod gets
// one block, mapped from container ID 0, the same for UIDs and GIDs.
//
// The block is recorded in the pod's directory (<pods dir>/<uid>/userns,
// the kubelet's file name and JSON), so that a restarted agent reads the
// blocks back in New and never hands one in use to another pod. Release
// frees a pod's block (and removes the file) once the pod no longer runs;
// CleanupOrphans frees the blocks of pods the agent no longer knows.
//
//	first, length, err := userns.KubeletMappings(userns.HostIDs(), idsPerPod)
//	m, err := userns.New(userns.Config{PodsDir: dir, IDsPerPod: idsPerPod,
//		FirstID: first, Length: length, MaxPods: maxPods})
//	mapping, err := m.GetOrCreate(pod.UID) // the sandbox's UsernsOptions
package userns
