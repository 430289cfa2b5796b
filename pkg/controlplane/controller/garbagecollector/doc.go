// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's pkg/controller/garbagecollector:
//
//   - background: a dependent whose every owner reference points at a
//     missing owner (absent, or present with another UID) is deleted;
//     references to missing owners beside a live one are removed;
//   - foreground: an owner being deleted with the foregroundDeletion
//     finalizer gets its dependents deleted, and loses the finalizer once no
//     dependent with blockOwnerDeletion remains;
//   - orphan: an owner being deleted with the orphan finalizer has its
//     references removed from its dependents, then loses the finalizer.
//
// It watches the types the control plane serves (see kinds.go) through
// typed informers; owner kinds it does not know are treated as present.
//
//	gc := garbagecollector.New(client, factory, log)
//	factory.Start(ctx.Done())
//	err := gc.Run(ctx, 2)
package garbagecollector
