package eviction

// ReclaimStep is a node-level reclaim the agent runs before evicting.
type ReclaimStep string

// The kubelet's node reclaim functions.
const (
	// DeleteAllUnusedContainers removes every exited container and
	// sandbox not needed (the container GC's evictNonDeletedPods=true run).
	DeleteAllUnusedContainers ReclaimStep = "DeleteAllUnusedContainers"
	// DeleteUnusedImages removes every image no container uses, the
	// sandbox image excepted (the image GC's DeleteUnusedImages).
	DeleteUnusedImages ReclaimStep = "DeleteUnusedImages"
)

// reclaimSteps is the kubelet's buildSignalToNodeReclaimFuncs: memory
// and pids have none; disk signals delete dead containers, then unused
// images, on the filesystem that holds them.
func reclaimSteps(d Disks) map[Signal][]ReclaimStep {
	both := []ReclaimStep{DeleteAllUnusedContainers, DeleteUnusedImages}
	m := map[Signal][]ReclaimStep{}
	set := func(steps []ReclaimStep, signals ...Signal) {
		for _, s := range signals {
			m[s] = steps
		}
	}
	switch {
	case d.DedicatedImageFs && !d.SplitContainerImageFs:
		// nodefs holds logs and volumes only: nothing to collect there.
		set(nil, SignalNodeFsAvailable, SignalNodeFsInodesFree)
		set(both, SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	case d.DedicatedImageFs:
		set([]ReclaimStep{DeleteUnusedImages}, SignalImageFsAvailable, SignalImageFsInodesFree)
		set([]ReclaimStep{DeleteAllUnusedContainers}, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	default:
		set(both, SignalNodeFsAvailable, SignalNodeFsInodesFree, SignalImageFsAvailable, SignalImageFsInodesFree, SignalContainerFsAvailable, SignalContainerFsInodesFree)
	}
	return m
}
