package flow

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

// node2Name is the second node, an agent on the "test2" containerd instance.
const node2Name = "flow-node-2"

// spreadDeployment tolerates an unreachable node for 2 s only, so that its
// pods are evicted soon after the node goes silent.
const spreadDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: spread
spec:
  replicas: 4
  selector:
    matchLabels: {app: spread}
  template:
    metadata:
      labels: {app: spread}
    spec:
      terminationGracePeriodSeconds: 5
      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 2}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 2}
      containers:
      - name: c
        image: ` + framework.BusyboxImage + `
        command: ["sh", "-c", "` + sleeper + `"]
`

// skewDeployment prefers the first node strongly but must spread evenly
// over the nodes (topologySpreadConstraints, DoNotSchedule).
const skewDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: skew
spec:
  replicas: 4
  selector:
    matchLabels: {app: skew}
  template:
    metadata:
      labels: {app: skew}
    spec:
      terminationGracePeriodSeconds: 1
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
          - weight: 100
            preference:
              matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [` + nodeName + `]}]
      topologySpreadConstraints:
      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {app: skew}}}
      containers:
      - name: c
        image: ` + framework.BusyboxImage + `
        command: ["sh", "-c", "` + sleeper + `"]
`

// TestTwoNodes: a second agent with its own containerd joins as a second
// node; a deployment's pods spread over both, and one whose pods prefer the
// first node but must spread evenly (topology spread) lands 2 and 2; when
// the second agent stops,
// its node goes Unknown and tainted, its pods are evicted and replaced on
// the first node; when it comes back it finishes the evicted pods and its
// node is cleared.
func TestTwoNodes(t *testing.T) {
	stop2, err := framework.Test2Instance.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := stop2(); err != nil {
			t.Error(err)
		}
	})
	cri2, err := framework.Test2Instance.Dial()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cri2.Close() })
	if err := framework.Test2Instance.Sweep(cri2); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after its agent stopped: later tests see one node
		if err := admin.CoreV1().Nodes().Delete(context.Background(), node2Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete node %s: %v", node2Name, err)
		}
	})
	newAgent(t)
	b := newAgentOn(t, framework.Test2Instance, node2Name, cri2)
	waitNodeSchedulable(t, nodeName)
	waitNodeSchedulable(t, node2Name)

	// Cleanups run last-in first-out: delete, then wait for the pods.
	t.Cleanup(func() {
		waitFor(t, apiTimeout, "the deployment's pods to go", func() (bool, error) {
			n := len(labelledPods(t, "app=spread"))
			return n == 0, fmt.Errorf("%d pods left", n)
		})
	})
	deleteOnCleanup(t, "deployment/spread")
	mustKubectl(t, "apply", "-f", writeTemp(t, "spread.yaml", spreadDeployment))
	first := waitSpread(t, "4 pods running on both nodes", func(byNode map[string][]v1.Pod) bool {
		return len(byNode[nodeName]) > 0 && len(byNode[node2Name]) > 0 && len(byNode[nodeName])+len(byNode[node2Name]) == 4
	})
	// Without the spread constraint its pods would all prefer the first node.
	deleteOnCleanup(t, "deployment/skew")
	mustKubectl(t, "apply", "-f", writeTemp(t, "skew.yaml", skewDeployment))
	waitSpreadOf(t, "app=skew", "the skew deployment 2 and 2", func(byNode map[string][]v1.Pod) bool {
		return len(byNode[nodeName]) == 2 && len(byNode[node2Name]) == 2
	})
	mustKubectl(t, "delete", "deployment/skew", "--wait=true")
	waitFor(t, apiTimeout, "the skew deployment's pods to go", func() (bool, error) {
		n := len(labelledPods(t, "app=skew"))
		return n == 0, fmt.Errorf("%d pods left", n)
	})
	for _, p := range first[node2Name] {
		if n := len(containersIn(t, cri2, string(p.UID))); n != 1 {
			t.Errorf("pod %s on %s: %d containers in test2's runtime, want 1", p.Name, node2Name, n)
		}
		if n := len(containersOf(t, string(p.UID))); n != 0 {
			t.Errorf("pod %s on %s: %d containers in the first node's runtime, want 0", p.Name, node2Name, n)
		}
	}

	// The second agent stops; its containers keep running, its Lease stops.
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, node2Name+" to be Unknown with the unreachable taint", func() (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(context.Background(), node2Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		tainted := slices.ContainsFunc(n.Spec.Taints, func(tt v1.Taint) bool {
			return tt.Key == v1.TaintNodeUnreachable && tt.Effect == v1.TaintEffectNoExecute
		})
		return nodeReady(n) == v1.ConditionUnknown && tainted, fmt.Errorf("conditions %+v taints %+v", n.Status.Conditions, n.Spec.Taints)
	})
	waitSpread(t, "the evicted pods to be replaced on "+nodeName, func(byNode map[string][]v1.Pod) bool {
		return len(byNode[nodeName]) == 4 && len(byNode[node2Name]) == 0
	})
	for _, p := range first[node2Name] {
		got, err := admin.CoreV1().Pods("default").Get(context.Background(), p.Name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil {
			t.Errorf("evicted pod %s: err %v, want it Terminating while its node is away", p.Name, err)
		}
	}

	// It comes back: it stops the evicted pods, confirms their deletion,
	// and its node is Ready and untainted again.
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	for _, p := range first[node2Name] {
		waitPodGone(t, p.Name)
	}
	waitFor(t, apiTimeout, "test2's runtime to hold no sandbox", func() (bool, error) {
		sbs, err := cri2.ListPodSandbox(context.Background(), nil)
		return err == nil && len(sbs) == 0, err
	})
	waitNodeSchedulable(t, node2Name)
}

// waitSpread waits until the running, not deleted pods of the spread
// deployment, grouped by node, satisfy ok; it returns them.
func waitSpread(t *testing.T, what string, ok func(map[string][]v1.Pod) bool) map[string][]v1.Pod {
	t.Helper()
	return waitSpreadOf(t, "app=spread", what, ok)
}

// waitSpreadOf is waitSpread for the pods of another label selector.
func waitSpreadOf(t *testing.T, selector, what string, ok func(map[string][]v1.Pod) bool) map[string][]v1.Pod {
	t.Helper()
	var byNode map[string][]v1.Pod
	waitFor(t, apiTimeout, what, func() (bool, error) {
		byNode = map[string][]v1.Pod{}
		var states []string
		for _, p := range labelledPods(t, selector) {
			states = append(states, fmt.Sprintf("%s %s node=%q deleting=%v", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil))
			if runningPod(&p) && p.DeletionTimestamp == nil {
				byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
			}
		}
		return ok(byNode), fmt.Errorf("pods: %s", strings.Join(states, "; "))
	})
	return byNode
}

// containersIn lists the containers of a pod UID in the runtime cri talks to.
func containersIn(t *testing.T, cri *nart.Client, uid string) []*criv1.Container {
	t.Helper()
	cs, err := cri.ListContainers(context.Background(), &criv1.ContainerFilter{LabelSelector: map[string]string{nart.LabelPodUID: uid}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
