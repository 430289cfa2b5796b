// Package eviction is the kubelet's eviction manager as pure functions:
// the node agent keeps its node alive by watching eviction signals
// (memory.available, nodefs/imagefs space and inodes, pid.available),
// reporting MemoryPressure/DiskPressure/PIDPressure, reclaiming node-level
// resources (dead containers, unused images) and, when that is not enough,
// evicting one pod at a time in the kubelet's rank order.
//
// Nothing here touches the node. The agent, every monitoring interval:
//
//	policy, err := eviction.NewPolicy(cfg, enforceNodeAllocatable, disks, true) // once
//	obs := eviction.MakeObservations(figures) // from the summary provider
//	plan, state = eviction.Synchronize(now, policy, obs, pods, state)
//	// evict plan.LocalStorage; run plan.Reclaim, then, unless
//	// eviction.ReclaimSufficed(policy, freshObs), evict plan.Evict with its
//	// grace. state.Conditions feed the node status (NodeConditions, Taints)
//	// and eviction.Admit.
//
// Upstream's files are pkg/kubelet/eviction (helpers.go, eviction_manager.go,
// api/types.go, defaults_linux.go) and pkg/kubelet/nodestatus/setters.go
// for the node conditions' reasons and messages.
package eviction
