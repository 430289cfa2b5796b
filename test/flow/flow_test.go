package flow

import (
	"context"
	"fmt"
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/apiclient"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const apiTimeout = 90 * time.Second

// TestAgentJoinsAPI: the node registers and heartbeats, a pod bound to it
// runs and reports its status, a graceful delete stops it and removes it
// from the API, and a static pod gets a mirror pod.
func TestAgentJoinsAPI(t *testing.T) {
	a := newAgent(t)
	ctx := context.Background()

	t.Run("NodeReady", func(t *testing.T) {
		var node *v1.Node
		waitFor(t, apiTimeout, "the node to be Ready", func() (bool, error) {
			n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			node = n
			for _, c := range n.Status.Conditions {
				if c.Type == v1.NodeReady {
					return c.Status == v1.ConditionTrue, fmt.Errorf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
				}
			}
			return false, nil
		})
		for k, v := range map[string]string{"kubernetes.io/hostname": nodeName, "kubernetes.io/os": "linux", "kubernetes.io/arch": goruntime.GOARCH} {
			if node.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, node.Labels[k], v)
			}
		}
		if q := node.Status.Allocatable[v1.ResourcePods]; q.Value() != 110 {
			t.Errorf("allocatable pods = %s", q.String())
		}
		if node.Status.NodeInfo.ContainerRuntimeVersion == "" || node.Status.NodeInfo.KubeletVersion == "" {
			t.Errorf("nodeInfo = %+v", node.Status.NodeInfo)
		}
	})

	t.Run("NodeImages", func(t *testing.T) {
		// The kubelet's Images setter: what the scheduler's ImageLocality reads.
		waitFor(t, apiTimeout, "the busybox image in the node status", func() (bool, error) {
			n, err := admin.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for i, im := range n.Status.Images {
				if i > 0 && im.SizeBytes > n.Status.Images[i-1].SizeBytes {
					return false, fmt.Errorf("images not sorted by size: %+v", n.Status.Images)
				}
				if slices.Contains(im.Names, framework.BusyboxImage) && im.SizeBytes > 0 {
					return true, nil
				}
			}
			return false, fmt.Errorf("status.images = %+v", n.Status.Images)
		})
	})

	t.Run("LeaseRenewed", func(t *testing.T) {
		var first *metav1.MicroTime
		waitFor(t, apiTimeout, "the node lease", func() (bool, error) {
			l, err := admin.CoordinationV1().Leases(apiclient.LeaseNamespace).Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if *l.Spec.HolderIdentity != nodeName || len(l.OwnerReferences) != 1 || l.OwnerReferences[0].Kind != "Node" {
				return false, fmt.Errorf("lease spec %+v owners %+v", l.Spec, l.OwnerReferences)
			}
			first = l.Spec.RenewTime
			return true, nil
		})
		waitFor(t, apiTimeout, "the lease renewal", func() (bool, error) {
			l, err := admin.CoordinationV1().Leases(apiclient.LeaseNamespace).Get(ctx, nodeName, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return l.Spec.RenewTime.After(first.Time), nil
		})
	})

	t.Run("PodRunsAndIsDeleted", func(t *testing.T) {
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "flow-web", Namespace: "default"},
			Spec: v1.PodSpec{
				NodeName: nodeName,
				Containers: []v1.Container{{
					Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"},
				}},
			},
		}
		created, err := admin.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			zero := int64(0)
			_ = admin.CoreV1().Pods("default").Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
		waitFor(t, apiTimeout, "the pod to run", func() (bool, error) {
			p, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			cs := p.Status.ContainerStatuses
			ok := p.Status.Phase == v1.PodRunning && p.Status.PodIP != "" && len(cs) == 1 && cs[0].State.Running != nil && cs[0].ContainerID != ""
			return ok, fmt.Errorf("phase %s podIP %q containers %+v", p.Status.Phase, p.Status.PodIP, cs)
		})
		if n := sandboxesOf(t, string(created.UID)); n != 1 {
			t.Fatalf("%d sandboxes for the pod, want 1", n)
		}
		waitFor(t, apiTimeout, "the pod's Started event from the kubelet", func() (bool, error) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.UID == created.UID && e.Reason == "Started" && e.Source.Component == "kubelet" && e.Source.Host == nodeName {
					return true, nil
				}
			}
			return false, fmt.Errorf("%d events, none Started for the pod", len(evs.Items))
		})
		// kubectl delete: the default grace period.
		if err := admin.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, apiTimeout, "the pod to leave the API", func() (bool, error) {
			_, err := admin.CoreV1().Pods("default").Get(ctx, pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
		if n := sandboxesOf(t, string(created.UID)); n != 0 {
			t.Errorf("%d sandboxes left after the deletion", n)
		}
	})

	t.Run("StaticPodMirror", func(t *testing.T) {
		manifest := `apiVersion: v1
kind: Pod
metadata:
  name: flow-static
spec:
  containers:
  - name: main
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
`
		if err := a.WriteManifest("static.yaml", manifest); err != nil {
			t.Fatal(err)
		}
		name := "flow-static-" + nodeName
		waitFor(t, apiTimeout, "the mirror pod to run", func() (bool, error) {
			p, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			_, mirror := p.Annotations[podutil.ConfigMirrorAnnotation]
			ok := mirror && p.Status.Phase == v1.PodRunning && len(p.OwnerReferences) == 1 && p.OwnerReferences[0].Kind == "Node"
			return ok, fmt.Errorf("annotations %v phase %s owners %v", p.Annotations, p.Status.Phase, p.OwnerReferences)
		})
		if err := a.RemoveManifest("static.yaml"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, apiTimeout, "the mirror pod to go", func() (bool, error) {
			_, err := admin.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	})
}

func sandboxesOf(t *testing.T, uid string) int {
	t.Helper()
	sbs, err := cri.ListPodSandbox(context.Background(), &criv1.PodSandboxFilter{LabelSelector: map[string]string{nart.LabelPodUID: uid}})
	if err != nil {
		t.Fatal(err)
	}
	return len(sbs)
}
