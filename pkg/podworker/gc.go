package podworker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// GCPolicy is the kubelet's container GC policy (ContainerGCPolicy).
type GCPolicy struct {
	// MinAge is how long ago a dead container must have been created to
	// be collected (--minimum-container-ttl-duration).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead containers each (pod, container
	// name) keeps; negative: no limit (--maximum-dead-containers-per-container).
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all;
	// negative: no limit (--maximum-dead-containers).
	MaxContainers int
}

// DefaultGCPolicy is the kubelet's policy from its flags' defaults:
// MinAge 0, MaxPerPodContainer 1, MaxContainers -1.
func DefaultGCPolicy() GCPolicy {
	return GCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// DefaultContainerGCPeriod is the kubelet's ContainerGCPeriod.
const DefaultContainerGCPeriod = time.Minute

// GCContainer is one container the runtime holds, as the GC sees it.
type GCContainer struct {
	ID        string
	SandboxID string
	PodUID    types.UID
	Name      string
	// Running: CONTAINER_RUNNING, never collected. Unknown:
	// CONTAINER_UNKNOWN, stopped before it is removed.
	Running   bool
	Unknown   bool
	CreatedAt time.Time
}

// GCSandbox is one sandbox the runtime holds, as the GC sees it.
type GCSandbox struct {
	ID        string
	PodUID    types.UID
	Ready     bool
	CreatedAt time.Time
}

// GCPodState is what the pod manager knows of a pod, the kubelet's
// podStateProvider.
type GCPodState struct {
	// RemoveContent is ShouldPodContentBeRemoved: the pod is deleted (or
	// unknown) and terminated, or evicted: every dead container, every
	// sandbox not in use and its log directory go.
	RemoveContent bool
	// RemoveRuntime is ShouldPodRuntimeBeRemoved: the pod is terminated;
	// its dead containers and sandboxes go only when the GC evicts
	// non-deleted pods (the eviction manager's reclaim).
	RemoveRuntime bool
}

// GCInput is everything a collection decides from.
type GCInput struct {
	Policy     GCPolicy
	Now        time.Time
	Containers []GCContainer
	Sandboxes  []GCSandbox
	// LogDirs are the entry names of the pod logs directory
	// (<namespace>_<name>_<uid>).
	LogDirs []string
	// Pods says what is known of a pod UID.
	Pods func(uid types.UID) GCPodState
	// AllSourcesReady: every pod source was heard from; until then no
	// pod's content is removed as deleted.
	AllSourcesReady bool
	// EvictNonDeletedPods also removes the content of terminated pods
	// not deleted yet (DeleteAllUnusedContainers).
	EvictNonDeletedPods bool
}

// GCPlan is what one collection removes, in order: containers (oldest
// first within each step), then sandboxes, then log directories.
type GCPlan struct {
	Containers []GCContainer
	Sandboxes  []GCSandbox
	LogDirs    []string
}

// Empty reports whether the plan removes nothing.
func (p GCPlan) Empty() bool {
	return len(p.Containers) == 0 && len(p.Sandboxes) == 0 && len(p.LogDirs) == 0
}

// String is a short form for logs.
func (p GCPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "containers=[")
	for i, c := range p.Containers {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s/%s(%.12s)", c.PodUID, c.Name, c.ID)
	}
	fmt.Fprintf(&b, "] sandboxes=[")
	for i, s := range p.Sandboxes {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(%.12s)", s.PodUID, s.ID)
	}
	fmt.Fprintf(&b, "] logDirs=%v", p.LogDirs)
	return b.String()
}

type evictUnit struct {
	uid  types.UID
	name string
}

// PlanGC is the kubelet's containerGC.GarbageCollect as a pure function:
//
//  1. dead containers created at least MinAge ago, grouped by (pod UID,
//     container name): all of them for pods whose content may go (once
//     all sources are ready), then the oldest beyond MaxPerPodContainer
//     per unit, then the oldest beyond MaxContainers on the node (first
//     evenly per unit, at least one each, then oldest first overall);
//  2. sandboxes neither ready nor holding a container (counting the
//     containers step 1 removes as gone): all of them for pods whose
//     content may go, else all but the newest;
//  3. log directories of pods whose content may go (once all sources are
//     ready), except those of pods with a running container.
func PlanGC(in GCInput) GCPlan {
	state := map[types.UID]GCPodState{}
	podState := func(uid types.UID) GCPodState {
		s, ok := state[uid]
		if !ok {
			s = in.Pods(uid)
			state[uid] = s
		}
		return s
	}
	removable := func(uid types.UID) bool {
		s := podState(uid)
		return s.RemoveContent || (in.EvictNonDeletedPods && s.RemoveRuntime)
	}
	var plan GCPlan
	removed := map[string]bool{}
	remove := func(cs []GCContainer) {
		for _, c := range cs {
			plan.Containers = append(plan.Containers, c)
			removed[c.ID] = true
		}
	}

	// 1. Containers.
	units := map[evictUnit][]GCContainer{}
	newestGCTime := in.Now.Add(-in.Policy.MinAge)
	for _, c := range in.Containers {
		if c.Running || newestGCTime.Before(c.CreatedAt) {
			continue
		}
		k := evictUnit{c.PodUID, c.Name}
		units[k] = append(units[k], c)
	}
	keys := make([]evictUnit, 0, len(units))
	for k, u := range units {
		sortNewestFirst(u)
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b evictUnit) int {
		return cmp.Or(cmp.Compare(a.uid, b.uid), cmp.Compare(a.name, b.name))
	})
	if in.AllSourcesReady {
		kept := keys[:0]
		for _, k := range keys {
			if removable(k.uid) {
				remove(oldestFirst(units[k]))
				delete(units, k)
				continue
			}
			kept = append(kept, k)
		}
		keys = kept
	}
	enforcePerUnit := func(limit int) {
		for _, k := range keys {
			u := units[k]
			if len(u) > limit {
				remove(oldestFirst(u[limit:]))
				units[k] = u[:limit]
			}
		}
	}
	if in.Policy.MaxPerPodContainer >= 0 {
		enforcePerUnit(in.Policy.MaxPerPodContainer)
	}
	count := func() int {
		n := 0
		for _, u := range units {
			n += len(u)
		}
		return n
	}
	if limit := in.Policy.MaxContainers; limit >= 0 && count() > limit {
		enforcePerUnit(max(limit/len(units), 1))
		if n := count(); n > limit {
			var all []GCContainer
			for _, k := range keys {
				all = append(all, units[k]...)
			}
			sortNewestFirst(all)
			remove(oldestFirst(all[len(all)-(n-limit):]))
		}
	}

	// 2. Sandboxes.
	inUse := map[string]bool{}
	running := map[types.UID]bool{}
	for _, c := range in.Containers {
		if !removed[c.ID] {
			inUse[c.SandboxID] = true
		}
		if c.Running {
			running[c.PodUID] = true
		}
	}
	byPod := map[types.UID][]GCSandbox{}
	for _, s := range in.Sandboxes {
		byPod[s.PodUID] = append(byPod[s.PodUID], s)
		if s.Ready {
			running[s.PodUID] = true
		}
	}
	uids := make([]types.UID, 0, len(byPod))
	for uid := range byPod {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	for _, uid := range uids {
		sbs := byPod[uid]
		slices.SortStableFunc(sbs, func(a, b GCSandbox) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		keep := 1 // the newest, while the pod exists
		if removable(uid) {
			keep = 0
		}
		for i := len(sbs) - 1; i >= keep; i-- {
			if !sbs[i].Ready && !inUse[sbs[i].ID] {
				plan.Sandboxes = append(plan.Sandboxes, sbs[i])
			}
		}
	}

	// 3. Log directories.
	if in.AllSourcesReady {
		for _, name := range in.LogDirs {
			uid := podUIDFromLogsDir(name)
			if uid == "" || running[uid] || !podState(uid).RemoveContent {
				continue
			}
			plan.LogDirs = append(plan.LogDirs, name)
		}
	}
	return plan
}

// podUIDFromLogsDir is the UID part of <namespace>_<name>_<uid>, as the
// kubelet's parsePodUIDFromLogsDirectory; "" for a name of another form
// (which the kubelet would read as a UID, and remove), left alone.
func podUIDFromLogsDir(name string) types.UID {
	parts := strings.Split(name, "_")
	if len(parts) < 3 || parts[len(parts)-1] == "" {
		return ""
	}
	return types.UID(parts[len(parts)-1])
}

func sortNewestFirst(cs []GCContainer) {
	slices.SortStableFunc(cs, func(a, b GCContainer) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
}

// oldestFirst reverses a newest-first slice into a copy.
func oldestFirst(cs []GCContainer) []GCContainer {
	out := slices.Clone(cs)
	slices.Reverse(out)
	return out
}
