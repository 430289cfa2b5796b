// Package eviction is the kubelet's eviction manager as pure functions:
// the node agent keeps its node alive by watching eviction signals
// (memory.available, nodefs/imagefs space and inodes, pid.available),
// reporting MemoryPressure/DiskPressure/PIDPressure, reclaiming node-level
// resources (dead containers, unused images) and, when that is not enough,
// evicting one pod at a time in the kubelet's rank order.
//
// Nothing here touches the node. The agent, every monitoring interval:
//
//	thresholds, err := eviction.Parse(cfg)               // once, at start
//	obs := eviction.MakeObservations(figures)            // from /stats/summary
//	plan, state = eviction.Synchronize(now, policy, obs, pods, state)
//	// run plan.Reclaim, then, if !eviction.ReclaimSufficed(policy, obsAfter),
//	// stop plan.Evict with its grace; plan.Conditions feed the node status
//	// and Admit.
//
// Upstream's files are pkg/kubelet/eviction (helpers.go, eviction_manager.go,
// api/types.go, defaults_linux.go) and pkg/kubelet/nodestatus/setters.go
// for the node conditions' reasons and messages.
package eviction
