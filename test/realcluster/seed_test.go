package realcluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// apiTimeout bounds waits on the cluster: scheduling, the agent's sync,
// the controllers.
const apiTimeout = 2 * time.Minute

// TestSeedFlow: kubectl run against the real API server; kube-scheduler
// binds the pod to the agent's node, the agent runs it and reports its
// status and events through the real API (Node authorizer,
// NodeRestriction), kubectl logs and exec reach the agent through
// kube-apiserver's kubelet client, and kubectl delete removes the pod's
// containers from containerd.
func TestSeedFlow(t *testing.T) {
	deleteOnCleanup(t, "pod/seed")
	kctl.Must(t, "run", "seed", "--image="+framework.BusyboxImage, "--restart=Never",
		"--command", "--", "sh", "-c", "echo hello-from-seed; trap 'exit 0' TERM; sleep 3600 & wait")
	kctl.Must(t, "wait", "--for=condition=Ready", "pod/seed", "--timeout=120s")
	if got := kctl.Must(t, "get", "pod", "seed", "-o", "jsonpath={.spec.nodeName}"); got != nodeName {
		t.Errorf("spec.nodeName = %q, want %q", got, nodeName)
	}
	uid := kctl.Must(t, "get", "pod", "seed", "-o", "jsonpath={.metadata.uid}")

	framework.WaitFor(t, apiTimeout, "kubectl logs seed", func() (bool, error) {
		out, stderr, err := kctl.Run(t, "logs", "seed")
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		return strings.Contains(out, "hello-from-seed"), fmt.Errorf("logs: %q", out)
	})
	if out := kctl.Must(t, "exec", "seed", "--", "sh", "-c", "echo exec-$((6*7))"); strings.TrimSpace(out) != "exec-42" {
		t.Errorf("kubectl exec: %q, want exec-42", out)
	}

	// The kubelet's events are posted asynchronously.
	reasons := []string{"Scheduled", "Pulled", "Created", "Started"}
	var evSection string
	framework.WaitFor(t, apiTimeout, "the pod's events in kubectl describe", func() (bool, error) {
		out, stderr, err := kctl.Run(t, "describe", "pod", "seed")
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		_, ev, found := strings.Cut(out, "\nEvents:")
		if !found {
			return false, fmt.Errorf("no Events section")
		}
		evSection = ev
		for _, r := range reasons {
			if !strings.Contains(ev, r) {
				return false, fmt.Errorf("events lack %s", r)
			}
		}
		return true, nil
	})
	// From the agent: reported as the kubelet of the node.
	if !strings.Contains(evSection, "kubelet") {
		t.Errorf("describe: no event from the kubelet:\n%s", evSection)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	evs, err := cl.admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=seed,reason=Started"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) == 0 || evs.Items[0].Source.Component != "kubelet" || evs.Items[0].Source.Host != nodeName {
		t.Errorf("Started events: %+v, want one from kubelet on %s", evs.Items, nodeName)
	}

	if n := len(containersOf(t, uid)); n == 0 {
		t.Fatalf("containerd holds no container of pod %s", uid)
	}
	kctl.Must(t, "delete", "pod", "seed", "--timeout=90s")
	framework.WaitFor(t, apiTimeout, "seed's sandboxes and containers to go", func() (bool, error) {
		cs, sbs := containersOf(t, uid), sandboxesOf(t, uid)
		return len(cs) == 0 && sbs == 0, fmt.Errorf("%d containers, %d sandboxes left", len(cs), sbs)
	})
}

// TestDeployment: kube-controller-manager's deployment and replicaset
// controllers (under their own service accounts:
// --use-service-account-credentials) create the pods, the agent runs them,
// and the Deployment reaches 2 available replicas from the agent's
// readiness reports.
func TestDeployment(t *testing.T) {
	deleteOnCleanup(t, "deployment/web")
	kctl.Must(t, "create", "deployment", "web", "--image="+framework.BusyboxImage, "--replicas=2",
		"--", "sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait")
	kctl.Must(t, "rollout", "status", "deployment/web", "--timeout=180s")
	if got := kctl.Must(t, "get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "2" {
		t.Errorf("availableReplicas = %q, want 2", got)
	}
	uids := strings.Fields(kctl.Must(t, "get", "pods", "-l", "app=web", "-o", "jsonpath={.items[*].metadata.uid}"))
	if len(uids) != 2 {
		t.Fatalf("pods of web: %v, want 2", uids)
	}
	kctl.Must(t, "delete", "deployment", "web", "--timeout=90s")
	framework.WaitFor(t, apiTimeout, "web's pods to go from the API and containerd", func() (bool, error) {
		out, stderr, err := kctl.Run(t, "get", "pods", "-l", "app=web", "-o", "name")
		if err != nil {
			return false, fmt.Errorf("%v: %s", err, stderr)
		}
		left := 0
		for _, uid := range uids {
			left += len(containersOf(t, uid)) + sandboxesOf(t, uid)
		}
		return strings.TrimSpace(out) == "" && left == 0, fmt.Errorf("pods %q, %d containers and sandboxes left", out, left)
	})
}

// deleteOnCleanup deletes the objects (kubectl resource/name) when the
// test ends, waiting for them, so that a failed test leaves no pod for
// the next.
func deleteOnCleanup(t *testing.T, objs ...string) {
	t.Cleanup(func() {
		for _, o := range objs {
			_, _, _ = kctl.Run(t, "delete", o, "--ignore-not-found", "--wait=true", "--timeout=90s")
		}
	})
}

// containersOf lists the containers (any state) of a pod UID in containerd.
func containersOf(t *testing.T, uid string) []*criv1.Container {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := cri.ListContainers(ctx, &criv1.ContainerFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	if err != nil {
		t.Fatalf("list containers: %v", err)
	}
	return cs
}

// sandboxesOf counts the sandboxes (any state) of a pod UID in containerd.
func sandboxesOf(t *testing.T, uid string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sbs, err := cri.ListPodSandbox(ctx, &criv1.PodSandboxFilter{LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid}})
	if err != nil {
		t.Fatalf("list sandboxes: %v", err)
	}
	return len(sbs)
}
