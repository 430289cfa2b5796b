package flow

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// sleeper is a command that runs until SIGTERM and then exits at once.
const sleeper = "trap 'exit 0' TERM; sleep 3600 & wait"

// waitSchedulable waits until the node is Ready without NoSchedule or
// NoExecute taints, so that the scheduler places pods on it.
func waitSchedulable(t *testing.T) { waitNodeSchedulable(t, nodeName) }

// waitNodeSchedulable is waitSchedulable for the named node.
func waitNodeSchedulable(t *testing.T, name string) {
	t.Helper()
	waitFor(t, apiTimeout, "node "+name+" to be Ready and untainted", func() (bool, error) {
		n, err := admin.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return nodeReady(n) == v1.ConditionTrue && len(n.Spec.Taints) == 0 && !n.Spec.Unschedulable,
			fmt.Errorf("conditions %+v taints %+v", n.Status.Conditions, n.Spec.Taints)
	})
}

// nodeReady is the status of the node's Ready condition ("" if missing).
func nodeReady(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// runningPod: Running with every container running.
func runningPod(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" || len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil || cs.ContainerID == "" {
			return false
		}
	}
	return true
}

// waitPodRunning waits for the named pod in default to run.
func waitPodRunning(t *testing.T, name string) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	waitFor(t, apiTimeout, "pod "+name+" to run", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		pod = p
		return runningPod(p), fmt.Errorf("node %q phase %s conditions %+v containers %+v", p.Spec.NodeName, p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
	return pod
}

// waitPodGone waits until the named pod left the API.
func waitPodGone(t *testing.T, name string) {
	t.Helper()
	waitFor(t, apiTimeout, "pod "+name+" to leave the API", func() (bool, error) {
		_, err := admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}

// labelledPods lists the pods in default matching the selector.
func labelledPods(t *testing.T, selector string) []v1.Pod {
	t.Helper()
	l, err := admin.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// containersOf lists the first node's containers of a pod UID.
func containersOf(t *testing.T, uid string) []*criv1.Container { return containersIn(t, cri, uid) }

// deleteOnCleanup deletes the objects (kubectl resource/name) when the
// test ends and waits for pods that were bound to go, so that the agent's
// cleanup finds an empty runtime.
func deleteOnCleanup(t *testing.T, objs ...string) {
	t.Cleanup(func() {
		for _, o := range objs {
			_, _, _ = kubectl(t, "delete", o, "--ignore-not-found", "--timeout=90s")
		}
	})
}

// TestKubectlRunSchedulesAndServes is the seed flow: kubectl run without a
// node, the scheduler binds the pod to the agent's node, the agent runs it
// and reports events, the pod serves HTTP on its IP, and kubectl delete
// stops it.
func TestKubectlRunSchedulesAndServes(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/web")

	mustKubectl(t, "run", "web", "--image="+framework.BusyboxImage, "--", "httpd", "-f", "-p", "8080")
	pod := waitPodRunning(t, "web")
	if got := mustKubectl(t, "get", "pod", "web", "-o", "jsonpath={.spec.nodeName}"); got != nodeName {
		t.Errorf("spec.nodeName = %q, want %q", got, nodeName)
	}

	reasons := []string{"Scheduled", "Pulled", "Created", "Started"}
	// The kubelet's events are posted asynchronously: wait for them.
	var events string
	waitFor(t, apiTimeout, "the pod's events", func() (bool, error) {
		out, stderr, err := kubectl(t, "get", "events", "--field-selector", "involvedObject.name=web")
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		events = out
		for _, r := range reasons {
			if !strings.Contains(out, r) {
				return false, fmt.Errorf("get events lacks %s", r)
			}
		}
		return true, nil
	})
	if strings.Contains(events, "FailedScheduling") {
		t.Errorf("events of web list FailedScheduling:\n%s", events)
	}
	describe := mustKubectl(t, "describe", "pod", "web")
	_, evSection, found := strings.Cut(describe, "\nEvents:")
	if !found {
		t.Fatalf("describe pod web has no Events section:\n%s", describe)
	}
	for _, r := range reasons {
		if !strings.Contains(evSection, r) {
			t.Errorf("describe pod web: events lack %s:\n%s", r, evSection)
		}
	}
	for _, want := range []string{"Node:", nodeName, "Status:", "Running", "IP:", pod.Status.PodIP} {
		if !strings.Contains(describe, want) {
			t.Errorf("describe pod web lacks %q", want)
		}
	}

	// busybox httpd serves the working directory, /, without an index:
	// any HTTP answer proves the pod's network.
	url := "http://" + pod.Status.PodIP + ":8080/"
	waitFor(t, 30*time.Second, "HTTP from "+url, func() (bool, error) {
		c := http.Client{Timeout: 2 * time.Second}
		resp, err := c.Get(url)
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		t.Logf("GET %s: %s", url, resp.Status)
		return true, nil
	})

	mustKubectl(t, "delete", "pod", "web", "--timeout=90s")
	waitPodGone(t, "web")
	waitFor(t, 30*time.Second, "web's sandboxes to go", func() (bool, error) {
		n := sandboxesOf(t, string(pod.UID))
		return n == 0, fmt.Errorf("%d sandboxes left", n)
	})
	if cs := containersOf(t, string(pod.UID)); len(cs) != 0 {
		t.Errorf("%d containers of web left: %+v", len(cs), cs)
	}
}

// TestPodTooBigStaysPending: the scheduler leaves a pod that requests more
// CPU than the node has Pending, with the reason in PodScheduled.
func TestPodTooBigStaysPending(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/big")
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: big
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "sleep 3600"]
    resources:
      requests:
        cpu: "1000"
`
	mustKubectl(t, "apply", "-f", writeTemp(t, "big.yaml", manifest))
	var cond v1.PodCondition
	waitFor(t, apiTimeout, "PodScheduled=False", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				cond = c
				return c.Status == v1.ConditionFalse, nil
			}
		}
		return false, fmt.Errorf("conditions %+v", p.Status.Conditions)
	})
	if cond.Reason != v1.PodReasonUnschedulable || !strings.Contains(cond.Message, "Insufficient cpu") {
		t.Errorf("PodScheduled = %+v, want reason Unschedulable, message with \"Insufficient cpu\"", cond)
	}
	t.Logf("PodScheduled: %s %s: %s", cond.Status, cond.Reason, cond.Message)
	waitFor(t, apiTimeout, "a FailedScheduling event", func() (bool, error) {
		out, _, err := kubectl(t, "get", "events", "--field-selector", "involvedObject.name=big,reason=FailedScheduling")
		return err == nil && strings.Contains(out, "Insufficient cpu"), err
	})
	p, err := admin.CoreV1().Pods("default").Get(context.Background(), "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.NodeName != "" || p.Status.Phase != v1.PodPending {
		t.Errorf("big: nodeName %q phase %s, want unbound and Pending", p.Spec.NodeName, p.Status.Phase)
	}
	if out := mustKubectl(t, "get", "pod", "big", "-o", "jsonpath={.status.phase}"); out != "Pending" {
		t.Errorf("kubectl get pod big phase = %q", out)
	}
	mustKubectl(t, "delete", "pod", "big", "--timeout=60s")
	waitPodGone(t, "big")
}

// TestDeploymentLifecycle: a Deployment becomes available, replaces a
// deleted pod, rolls out an image change to a new ReplicaSet and scales to
// zero, with the agent running and stopping the containers.
func TestDeploymentLifecycle(t *testing.T) {
	reg, err := framework.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	newImage, err := reg.PushBusybox("flow/busybox", "2")
	if err != nil {
		t.Fatal(err)
	}
	// Runs after the agent's cleanup (cleanups run last-in first-out):
	// no container uses the image any more.
	t.Cleanup(func() {
		ctx := context.Background()
		if _, err := cri.ImageServiceClient().RemoveImage(ctx, &criv1.RemoveImageRequest{Image: &criv1.ImageSpec{Image: newImage}}); err != nil {
			t.Logf("remove image %s: %v", newImage, err)
		}
	})
	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "deployment/dep")
	t.Cleanup(func() {
		waitFor(t, apiTimeout, "the deployment's pods to go", func() (bool, error) {
			n := len(labelledPods(t, "app=dep"))
			return n == 0, fmt.Errorf("%d pods left", n)
		})
	})

	const sel = "app=dep"
	mustKubectl(t, "create", "deployment", "dep", "--image="+framework.BusyboxImage, "--replicas=3", "--", "sh", "-c", sleeper)
	mustKubectl(t, "rollout", "status", "deployment/dep", "--timeout=90s")
	if out := mustKubectl(t, "get", "deployment", "dep", "-o", "jsonpath={.status.availableReplicas}/{.status.readyReplicas}/{.status.replicas}"); out != "3/3/3" {
		t.Errorf("available/ready/replicas = %q, want 3/3/3", out)
	}
	table := mustKubectl(t, "get", "deployment", "dep", "--no-headers")
	if f := strings.Fields(table); len(f) < 4 || f[1] != "3/3" {
		t.Errorf("get deployment: %q, want READY 3/3", table)
	}
	seen := map[string]bool{} // every pod UID of the deployment
	waitRunning := func(what string, check func([]v1.Pod) error) []v1.Pod {
		t.Helper()
		var pods []v1.Pod
		waitFor(t, apiTimeout, what, func() (bool, error) {
			pods = labelledPods(t, sel)
			var states []string
			ok := len(pods) == 3
			for i := range pods {
				seen[string(pods[i].UID)] = true
				states = append(states, fmt.Sprintf("%s %s node=%q deleting=%v", pods[i].Name, pods[i].Status.Phase, pods[i].Spec.NodeName, pods[i].DeletionTimestamp != nil))
				ok = ok && runningPod(&pods[i]) && pods[i].DeletionTimestamp == nil && pods[i].Spec.NodeName == nodeName
			}
			if ok && check != nil {
				if err := check(pods); err != nil {
					return false, err
				}
			}
			return ok, fmt.Errorf("pods %v", states)
		})
		return pods
	}
	pods := waitRunning("3 running pods", nil)

	victim := pods[0].Name
	mustKubectl(t, "delete", "pod", victim, "--timeout=90s")
	pods = waitRunning("a replacement pod", func(ps []v1.Pod) error {
		for _, p := range ps {
			if p.Name == victim {
				return fmt.Errorf("%s still listed", victim)
			}
		}
		return nil
	})
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
	}
	if len(names) != 3 || names[victim] {
		t.Errorf("pods after deleting %s: %v", victim, names)
	}
	oldHash := pods[0].Labels["pod-template-hash"]

	mustKubectl(t, "set", "image", "deployment/dep", "busybox="+newImage)
	mustKubectl(t, "rollout", "status", "deployment/dep", "--timeout=120s")
	pods = waitRunning("3 running pods of the new image", func(ps []v1.Pod) error {
		for _, p := range ps {
			if p.Spec.Containers[0].Image != newImage || p.Labels["pod-template-hash"] == oldHash {
				return fmt.Errorf("%s runs %s (hash %s)", p.Name, p.Spec.Containers[0].Image, p.Labels["pod-template-hash"])
			}
		}
		return nil
	})
	newHash := pods[0].Labels["pod-template-hash"]
	rss, err := admin.AppsV1().ReplicaSets("default").List(context.Background(), metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	var hashes []string
	for _, rs := range rss.Items {
		h := rs.Labels["pod-template-hash"]
		hashes = append(hashes, h)
		want := int32(0)
		if h == newHash {
			want = 3
		}
		if *rs.Spec.Replicas != want {
			t.Errorf("replica set %s: %d replicas, want %d", rs.Name, *rs.Spec.Replicas, want)
		}
	}
	if len(rss.Items) != 2 || !slices.Contains(hashes, oldHash) || !slices.Contains(hashes, newHash) {
		t.Errorf("replica sets with hashes %v, want the old %s and the new %s", hashes, oldHash, newHash)
	}
	if out := mustKubectl(t, "get", "deployment", "dep", "-o", "jsonpath={.status.updatedReplicas}/{.status.availableReplicas}"); out != "3/3" {
		t.Errorf("updated/available = %q, want 3/3", out)
	}

	mustKubectl(t, "scale", "deployment/dep", "--replicas=0")
	waitFor(t, apiTimeout, "the pods to leave the API", func() (bool, error) {
		n := len(labelledPods(t, sel))
		return n == 0, fmt.Errorf("%d pods left", n)
	})
	waitFor(t, 30*time.Second, "the pods' containers to go", func() (bool, error) {
		for uid := range seen {
			if cs := containersOf(t, uid); len(cs) != 0 {
				return false, fmt.Errorf("pod %s: %d containers left", uid, len(cs))
			}
		}
		return true, nil
	})
	if out := mustKubectl(t, "get", "deployment", "dep", "-o", "jsonpath={.status.replicas}"); out != "" && out != "0" {
		t.Errorf("status.replicas after scaling to 0 = %q", out)
	}
}

// TestAgentRestartKeepsAPIPods: restarting the agent leaves the running
// containers of API pods alone and their statuses Running.
func TestAgentRestartKeepsAPIPods(t *testing.T) {
	a := newAgent(t)
	waitSchedulable(t)
	names := []string{"keep-1", "keep-2"}
	for _, n := range names {
		deleteOnCleanup(t, "pod/"+n)
		mustKubectl(t, "run", n, "--image="+framework.BusyboxImage, "--command", "--", "sh", "-c", sleeper)
	}
	before := map[string]*v1.Pod{}
	for _, n := range names {
		before[n] = waitPodRunning(t, n)
	}

	if err := a.Stop(); err != nil {
		t.Fatalf("stop agent: %v", err)
	}
	// The containers outlive the agent.
	for _, n := range names {
		if cs := containersOf(t, string(before[n].UID)); len(cs) != 1 || cs[0].State != criv1.ContainerState_CONTAINER_RUNNING {
			t.Errorf("%s after the agent stopped: containers %+v", n, cs)
		}
	}
	restarted, logOffset := time.Now(), len(a.Logs())
	if err := a.Start(); err != nil {
		t.Fatalf("start agent again: %v", err)
	}

	// The restarted agent has synced once it lists the pods again with
	// their statuses and has renewed the node's lease.
	waitFor(t, apiTimeout, "the restarted agent to list the pods", func() (bool, error) {
		pods, err := a.Pods()
		if err != nil {
			return false, err
		}
		found := 0
		for i := range pods {
			if b, ok := before[pods[i].Name]; ok && pods[i].UID == b.UID {
				found++
			}
		}
		return found == len(names), fmt.Errorf("agent lists %d of %d pods", found, len(names))
	})
	waitFor(t, apiTimeout, "a heartbeat after the restart", func() (bool, error) {
		l, err := admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return l.Spec.RenewTime != nil && l.Spec.RenewTime.After(restarted), nil
	})
	waitSchedulable(t)
	waitFor(t, apiTimeout, "the restarted agent's first sync", func() (bool, error) {
		return strings.Contains(a.Logs()[logOffset:], "first sync done"), nil
	})
	// The first sync after the restart found nothing to do for the pods.
	for line := range strings.SplitSeq(a.Logs()[logOffset:], "\n") {
		for _, n := range names {
			if strings.Contains(line, "pod=default/"+n+" ") {
				t.Errorf("the restarted agent acted on %s: %s", n, line)
			}
		}
	}

	for _, n := range names {
		b := before[n]
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.UID != b.UID || !runningPod(p) {
			t.Errorf("%s after the restart: uid %s (was %s) phase %s containers %+v", n, p.UID, b.UID, p.Status.Phase, p.Status.ContainerStatuses)
			continue
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID != b.Status.ContainerStatuses[0].ContainerID || cs.RestartCount != 0 {
			t.Errorf("%s after the restart: container %s restarts %d, was %s restarts 0", n, cs.ContainerID, cs.RestartCount, b.Status.ContainerStatuses[0].ContainerID)
		}
		if !cs.State.Running.StartedAt.Equal(&b.Status.ContainerStatuses[0].State.Running.StartedAt) {
			t.Errorf("%s: startedAt %v, was %v", n, cs.State.Running.StartedAt, b.Status.ContainerStatuses[0].State.Running.StartedAt)
		}
		rt := containersOf(t, string(b.UID))
		if len(rt) != 1 || "containerd://"+rt[0].Id != b.Status.ContainerStatuses[0].ContainerID || rt[0].Metadata.Attempt != 0 || rt[0].State != criv1.ContainerState_CONTAINER_RUNNING {
			t.Errorf("%s in the runtime after the restart: %+v", n, rt)
		}
		if n := sandboxesOf(t, string(b.UID)); n != 1 {
			t.Errorf("%s: %d sandboxes after the restart, want 1", b.Name, n)
		}
	}
	for _, n := range names {
		mustKubectl(t, "delete", "pod", n, "--timeout=90s")
		waitPodGone(t, n)
	}
}
