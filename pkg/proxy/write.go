package proxy

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// portChange is one service port's objects before (as last written) and
// after a sync; either may be nil (a new port, a removed one). With old
// nil every object of cur is written, which is what a full sync wants.
type portChange struct{ old, cur *portRules }

// writeChanges adds to tx the operations that turn the table from the
// old objects into the new ones, and returns the chains that go. They go
// in two passes over all ports, because nft checks references within the
// transaction, in order:
//
//  1. map elements that go or change are deleted first, so that a key
//     another port takes over in the same sync (a NodePort or a reused
//     cluster IP) is free when it is added;
//  2. new and changed chains are (re)filled, chains that go are emptied
//     (their rules may name sets and chains being deleted), sets come and
//     go, new elements are added: everything a rule or element names
//     exists before it.
//
// Chains that go are only emptied, not deleted: Linux before 6.2 releases
// the references of deleted map elements after the transaction, so
// deleting in one transaction a chain and the element that pointed to it
// fails with EBUSY. The caller deletes them in a later sync (stale.go).
func writeChanges(tx *knftables.Transaction, changes []portChange) (gone []string) {
	for i := range changes {
		changes[i].old = orEmpty(changes[i].old)
		changes[i].cur = orEmpty(changes[i].cur)
	}
	for _, c := range changes {
		for _, k := range sortedElems(c.old.elems) {
			if v, ok := c.cur.elems[k]; !ok || v != c.old.elems[k] {
				tx.Delete(element(k, elemValue{}))
			}
		}
	}
	for _, c := range changes {
		writeObjects(tx, c.old, c.cur)
		gone = append(gone, goneChains(c.old, c.cur)...)
	}
	return gone
}

func orEmpty(r *portRules) *portRules {
	if r == nil {
		return &portRules{}
	}
	return r
}

// writeObjects is pass 2 of writeChanges for one port.
func writeObjects(tx *knftables.Transaction, old, cur *portRules) {
	var rewrite []string
	for _, name := range slices.Sorted(maps.Keys(cur.chains)) {
		if prev, ok := old.chains[name]; !ok || !slices.Equal(prev, cur.chains[name]) {
			rewrite = append(rewrite, name)
			tx.Add(&knftables.Chain{Name: name})
			tx.Flush(&knftables.Chain{Name: name})
		}
	}
	for _, name := range goneChains(old, cur) {
		tx.Flush(&knftables.Chain{Name: name})
	}
	for _, name := range slices.Sorted(maps.Keys(old.sets)) {
		if _, ok := cur.sets[name]; !ok {
			tx.Delete(&knftables.Set{Name: name})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(cur.sets)) {
		if _, ok := old.sets[name]; !ok {
			tx.Add(affinitySetObject(name, cur.sets[name]))
		}
	}
	for _, name := range rewrite {
		for _, r := range cur.chains[name] {
			tx.Add(&knftables.Rule{Chain: name, Rule: r})
		}
	}
	for _, k := range sortedElems(cur.elems) {
		if v, ok := old.elems[k]; !ok || v != cur.elems[k] {
			tx.Add(element(k, cur.elems[k]))
		}
	}
}

func goneChains(old, cur *portRules) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(old.chains)) {
		if _, ok := cur.chains[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// affinitySetObject is a per-endpoint set of client addresses that the
// packet path fills ("update @set"), hence timeout and dynamic: nft
// adds "dynamic" itself on some systems, and a later add without it
// would then look like a redefinition and fail.
func affinitySetObject(name string, timeout time.Duration) *knftables.Set {
	return &knftables.Set{
		Name:    name,
		Type:    "ipv4_addr",
		Flags:   []knftables.SetFlag{knftables.DynamicFlag, knftables.TimeoutFlag},
		Timeout: knftables.PtrTo(timeout),
	}
}

func element(k elemKey, v elemValue) *knftables.Element {
	e := &knftables.Element{Map: k.mapName, Key: strings.Split(k.key, " . ")}
	if v.verdict != "" {
		e.Value = []string{v.verdict}
	}
	if v.comment != "" {
		e.Comment = knftables.PtrTo(v.comment)
	}
	return e
}

func sortedElems(m map[elemKey]elemValue) []elemKey {
	return slices.SortedFunc(maps.Keys(m), func(a, b elemKey) int {
		return cmp.Or(cmp.Compare(a.mapName, b.mapName), cmp.Compare(a.key, b.key))
	})
}
