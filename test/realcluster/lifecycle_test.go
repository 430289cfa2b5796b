package realcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	coordv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/test/framework"
)

// evictionToleration is the pod's tolerationSeconds for the unreachable
// and not-ready NoExecute taints (DefaultTolerationSeconds would give it
// 300).
const evictionToleration = 5

// TestNodeLifecycle: the agent stops; kube-controller-manager's node
// lifecycle controller (which taints NoExecute only while part of the
// zone is healthy: a zone whose every node is not Ready is in full
// disruption, and with every zone so it stops evicting, so the test keeps
// a second, unschedulable Node healthy by renewing its Lease), without the node's Lease renewed for
// --node-monitor-grace-period, marks the Node's Ready condition Unknown
// and taints it node.kubernetes.io/unreachable:NoExecute; the taint
// eviction controller deletes the pod once its tolerationSeconds pass
// (the pod stays Terminating: nothing runs its termination while the
// node is away). The agent restarts: the Node is Ready again without the
// taint, and the agent finishes the evicted pod (its containers killed,
// the pod removed from the API).
func TestNodeLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	deleteOnCleanup(t, "pod/evictee")
	secs := int64(evictionToleration)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "evictee", Namespace: "default"},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Image: framework.BusyboxImage,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
			Tolerations: []v1.Toleration{
				{Key: v1.TaintNodeUnreachable, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
				{Key: v1.TaintNodeNotReady, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute, TolerationSeconds: &secs},
			},
		},
	}
	created, err := cl.admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := string(created.UID)
	kctl.Must(t, "wait", "--for=condition=Ready", "pod/evictee", "--timeout=120s")
	keepPeerNodeReady(ctx, t, "realcluster-peer")

	// Whatever happens below, the shared agent runs again for the next test.
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			return
		}
		if err := agent.Start(); err != nil {
			t.Errorf("restart the agent: %v", err)
			return
		}
		if err := waitNodeReady(apiTimeout); err != nil {
			t.Errorf("after the test: %v", err)
		}
	})
	stopped = true
	if err := agent.Stop(); err != nil {
		t.Fatalf("stop the agent: %v", err)
	}
	if n := len(containersOf(t, uid)); n == 0 {
		t.Fatalf("the pod's containers stopped with the agent")
	}

	framework.WaitFor(t, apiTimeout, "the node lifecycle controller to mark the node Unknown and taint it unreachable", func() (bool, error) {
		n, err := cl.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ready := readyCondition(n)
		tainted := slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool {
			return t.Key == v1.TaintNodeUnreachable && t.Effect == v1.TaintEffectNoExecute
		})
		// TaintNodesByCondition's NoSchedule comes with it.
		noSchedule := slices.ContainsFunc(n.Spec.Taints, func(t v1.Taint) bool {
			return t.Key == v1.TaintNodeUnreachable && t.Effect == v1.TaintEffectNoSchedule
		})
		return ready != nil && ready.Status == v1.ConditionUnknown && ready.Reason == "NodeStatusUnknown" && tainted && noSchedule,
			fmt.Errorf("Ready %+v, taints %+v", ready, n.Spec.Taints)
	})
	framework.WaitFor(t, apiTimeout, "the taint eviction controller to delete the pod", func() (bool, error) {
		p, err := cl.admin.CoreV1().Pods("default").Get(ctx, "evictee", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionTimestamp != nil, errors.New("no deletionTimestamp")
	})
	// The taint manager's event on the pod.
	evs, err := cl.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=evictee,reason=TaintManagerEviction"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 {
		t.Errorf("no TaintManagerEviction event on the pod")
	}
	// Nothing kills the containers while the agent is away.
	if n := len(containersOf(t, uid)); n == 0 {
		t.Errorf("the evicted pod's containers went without the agent")
	}

	if err := agent.Start(); err != nil {
		t.Fatalf("restart the agent: %v", err)
	}
	stopped = false
	if err := waitNodeReady(apiTimeout); err != nil {
		t.Fatal(err)
	}
	framework.WaitFor(t, apiTimeout, "the unreachable taint to be removed", func() (bool, error) {
		n, err := cl.admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, tn := range n.Spec.Taints {
			if tn.Key == v1.TaintNodeUnreachable || tn.Key == v1.TaintNodeNotReady {
				return false, fmt.Errorf("taints %+v", n.Spec.Taints)
			}
		}
		return true, nil
	})
	framework.WaitFor(t, apiTimeout, "the agent to finish the evicted pod", func() (bool, error) {
		_, err := cl.admin.CoreV1().Pods("default").Get(ctx, "evictee", metav1.GetOptions{})
		gone := apierrors.IsNotFound(err)
		if err != nil && !gone {
			return false, err
		}
		cs, sbs := containersOf(t, uid), sandboxesOf(t, uid)
		return gone && len(cs) == 0 && sbs == 0, fmt.Errorf("pod gone from the API: %v; %d containers, %d sandboxes left", gone, len(cs), sbs)
	})
}

// keepPeerNodeReady registers the Node name, unschedulable and Ready, and
// renews its Lease in kube-node-lease every few seconds until the test
// ends, when both are deleted.
func keepPeerNodeReady(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	n, err := cl.admin.CoreV1().Nodes().Create(ctx, &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       v1.NodeSpec{Unschedulable: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	leases := cl.admin.CoordinationV1().Leases(v1.NamespaceNodeLease)
	t.Cleanup(func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := cl.admin.CoreV1().Nodes().Delete(dctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete node %s: %v", name, err)
		}
		if err := leases.Delete(dctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete lease %s: %v", name, err)
		}
	})
	// The controllers write the new Node too (taints): retry conflicts.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := cl.admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		cur.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
			Message: "a peer the test keeps healthy", LastHeartbeatTime: now, LastTransitionTime: now}}
		_, err = cl.admin.CoreV1().Nodes().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	dur := int32(40)
	renew := metav1.NewMicroTime(time.Now())
	lease, err := leases.Create(ctx, &coordv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: n.UID}}},
		Spec: coordv1.LeaseSpec{HolderIdentity: &name, LeaseDurationSeconds: &dur, RenewTime: &renew},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
			renew := metav1.NewMicroTime(time.Now())
			lease.Spec.RenewTime = &renew
			cctx, cancel := context.WithTimeout(rctx, 5*time.Second)
			updated, err := leases.Update(cctx, lease, metav1.UpdateOptions{})
			cancel()
			if err == nil {
				lease = updated
			} else if l, gerr := leases.Get(rctx, name, metav1.GetOptions{}); gerr == nil {
				lease = l // a conflict: renew from the current copy
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
}

func readyCondition(n *v1.Node) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == v1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
