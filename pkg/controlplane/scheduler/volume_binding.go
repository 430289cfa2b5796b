package scheduler

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// bindVolumesTimeout bounds the wait for the binder to bind the claims the
// scheduler pre-bound. Upstream waits up to 600 s; this stays within the
// pod's assumption (assumedTTL), so that no second cycle places the pod
// meanwhile. On timeout the pod is retried; its volumes stay pre-bound.
const bindVolumesTimeout = assumedTTL - 5*time.Second

// newVolumeLookup reads claims, volumes and classes from the factory's
// informers.
func (s *Scheduler) newVolumeLookup() *volumeLookup {
	return &volumeLookup{
		claims:  s.factory.Core().V1().PersistentVolumeClaims().Lister(),
		volumes: s.factory.Core().V1().PersistentVolumes().Lister(),
		classes: s.factory.Storage().V1().StorageClasses().Lister(),
	}
}

// watchVolumes retries unschedulable pods when claims, volumes or classes
// appear or change: a claim gets bound, a volume is created for a class.
func (s *Scheduler) watchVolumes() error {
	for what, inf := range map[string]cache.SharedIndexInformer{
		"claim":         s.factory.Core().V1().PersistentVolumeClaims().Informer(),
		"volume":        s.factory.Core().V1().PersistentVolumes().Informer(),
		"storage class": s.factory.Storage().V1().StorageClasses().Informer(),
	} {
		if _, err := inf.AddEventHandler(crash.EventHandler(s.log, panicComponent, cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { s.moveAll(what + " added") },
			UpdateFunc: func(any, any) { s.moveAll(what + " updated") },
		})); err != nil {
			return err
		}
	}
	return nil
}

// preFilter runs the volume checks that do not depend on the node and
// returns the cycle's state for selectHost.
func (s *Scheduler) preFilter(pod *v1.Pod, nodes []*nodeInfo) (*cycleState, error) {
	pv, msg, err := s.vols.preFilterVolumes(pod, nodes)
	if err != nil || msg != "" || pv == nil {
		return &cycleState{preFilterMsg: msg}, err
	}
	return &cycleState{filters: map[string]filterFunc{
		"VolumeRestrictions": pv.volumeRestrictions,
		"VolumeBinding":      pv.volumeBinding,
	}}, nil
}

// bindVolumes is upstream's VolumeBinding PreBind: the volumes chosen on
// node for the pod's WaitForFirstConsumer claims are pre-bound to them
// (spec.claimRef), then the binder completes the binding; the pod is bound
// once all its claims are.
func (s *Scheduler) bindVolumes(ctx context.Context, pod *v1.Pod, nodeName string) error {
	pv, msg, err := s.vols.preFilterVolumes(pod, nil)
	switch {
	case err != nil:
		return err
	case msg != "":
		return errors.New(msg)
	case pv == nil || len(pv.delayed) == 0:
		return nil
	}
	node, err := s.nodes.Get(nodeName)
	if err != nil {
		return err
	}
	chosen, ok := pv.matchDelayed(node)
	if !ok {
		return errors.New(reasonVolumeBindConfl)
	}
	for _, claim := range pv.delayed {
		if err := s.preBindVolume(ctx, chosen[claim.Name], claim); err != nil {
			return err
		}
	}
	return s.waitClaimsBound(ctx, pod.Namespace, pv.delayed)
}

func (s *Scheduler) preBindVolume(ctx context.Context, vol *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	clone, dirty, err := storagehelpers.GetBindVolumeToClaim(vol, claim)
	if err != nil || !dirty {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, apiTimeout)
	defer cancel()
	if _, err := s.client.CoreV1().PersistentVolumes().Update(callCtx, clone, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("pre-bind volume %s to claim %s/%s: %w", vol.Name, claim.Namespace, claim.Name, err)
	}
	s.log.Info("volume pre-bound", "volume", vol.Name, "claim", claim.Namespace+"/"+claim.Name)
	return nil
}

// waitClaimsBound waits until the binder has bound every claim.
func (s *Scheduler) waitClaimsBound(ctx context.Context, ns string, claims []*v1.PersistentVolumeClaim) error {
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, bindVolumesTimeout, true, func(context.Context) (bool, error) {
		for _, c := range claims {
			cur, err := s.vols.claims.PersistentVolumeClaims(ns).Get(c.Name)
			if err != nil {
				return false, err
			}
			if cur.Spec.VolumeName == "" || !metav1.HasAnnotation(cur.ObjectMeta, storagehelpers.AnnBindCompleted) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("binding volumes: %w", err)
	}
	return nil
}
