package scheduler_test

import (
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-base/metrics"

	"github.com/nodeagent/nodeagent/pkg/controlplane/internal/metricstest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/scheduler"
	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// testScheduler keeps the server's own scheduler (if wired) off these pods.
const testScheduler = "test-scheduler"

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startControlPlane runs the real server (embedded etcd) and returns an
// admin clientset; it stops with the test.
func startControlPlane(t *testing.T, log *slog.Logger) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(startControlPlaneConfig(t, log))
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// startControlPlaneConfig is startControlPlane returning the admin's
// client configuration.
func startControlPlaneConfig(t *testing.T, log *slog.Logger) *rest.Config {
	t.Helper()
	dir := t.TempDir()
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- server.Run(ctx, server.Config{
			DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
			EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t),
			DisableAgent: true, Logger: log, Ready: ready,
		})
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("server.Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop 30s after cancel")
		}
	})
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("server.Run returned before ready: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("control plane not ready after 60s")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, server.KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func createNode(t *testing.T, cs kubernetes.Interface, name, cpu string, labels map[string]string, ready bool) {
	t.Helper()
	ctx := t.Context()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	n.Labels[v1.LabelHostname] = name
	if !ready {
		n.Spec.Taints = []v1.Taint{{Key: v1.TaintNodeNotReady, Effect: v1.TaintEffectNoSchedule}}
	}
	if _, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	status := v1.ConditionTrue
	if !ready {
		status = v1.ConditionFalse
	}
	// The controllers update new nodes too (the pod CIDR): retry on a
	// conflict with the current object.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("8Gi"), v1.ResourcePods: resource.MustParse("110")}
		n.Status.Allocatable = n.Status.Capacity
		n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: status, Reason: "Test", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		_, err = cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func createPod(t *testing.T, cs kubernetes.Interface, name, cpu string, mutate ...func(*v1.Pod)) {
	t.Helper()
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: v1.PodSpec{
			SchedulerName: testScheduler,
			Containers: []v1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10", Resources: v1.ResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}}}},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	if _, err := cs.CoreV1().Pods(p.Namespace).Create(t.Context(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
}

func hostPort8080(p *v1.Pod) {
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
}

// waitPod polls the pod until done returns true (generous timeout).
func waitPod(t *testing.T, cs kubernetes.Interface, name, what string, done func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var last *v1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = p
		return done(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s: waiting for %s: %v; last: nodeName=%q conditions=%+v", name, what, err, last.Spec.NodeName, last.Status.Conditions)
	}
	return last
}

func waitBound(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	return waitPod(t, cs, name, "binding", func(p *v1.Pod) bool { return p.Spec.NodeName != "" }).Spec.NodeName
}

func waitUnschedulable(t *testing.T, cs kubernetes.Interface, name, msg string) {
	t.Helper()
	waitPod(t, cs, name, "PodScheduled=False "+msg, func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable && c.Message == msg {
				return p.Spec.NodeName == ""
			}
		}
		return false
	})
}

// eventAction is kube-scheduler's action of each event reason.
var eventAction = map[string]string{"Scheduled": "Binding", "FailedScheduling": "Scheduling"}

func waitEvent(t *testing.T, cs kubernetes.Interface, pod, reason, msg string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		evs, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			// Recorded through events.k8s.io/v1, as kube-scheduler does:
			// no source, the scheduler is the reporting controller.
			if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod && e.Reason == reason && e.Message == msg &&
				e.ReportingController == testScheduler && e.Action == eventAction[reason] && e.Source.Component == "" {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event %q for pod %s: %v", reason, msg, pod, err)
	}
}

func TestSchedulerAgainstRealServer(t *testing.T) {
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	cs := startControlPlane(t, log)
	createNode(t, cs, "big", "4", map[string]string{}, true)
	createNode(t, cs, "small", "2", map[string]string{"disk": "ssd"}, true)
	createNode(t, cs, "notready", "64", map[string]string{}, false)

	reg := metrics.NewKubeRegistry()
	s, err := scheduler.New(scheduler.Config{
		Client: cs, SchedulerName: testScheduler, Logger: log.With("component", "scheduler"),
		InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Metrics: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() { errc <- s.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("scheduler Run: %v", err)
		}
	}()

	// Least allocated: "big" has more free cpu.
	createPod(t, cs, "least", "500m")
	if got := waitBound(t, cs, "least"); got != "big" {
		t.Errorf("least: bound to %q, want big", got)
	}
	waitEvent(t, cs, "least", "Scheduled", "Successfully assigned default/least to big")

	// nodeSelector wins over free cpu.
	createPod(t, cs, "selected", "100m", func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{"disk": "ssd"} })
	if got := waitBound(t, cs, "selected"); got != "small" {
		t.Errorf("selected: bound to %q, want small", got)
	}

	// Too big for any node: Pending, with upstream's message.
	createPod(t, cs, "huge", "8")
	const hugeMsg = "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 Insufficient cpu."
	waitUnschedulable(t, cs, "huge", hugeMsg)
	waitEvent(t, cs, "huge", "FailedScheduling", hugeMsg)

	// Host ports: the second 8080 goes to the other node, a third fits nowhere.
	createPod(t, cs, "port-1", "100m", hostPort8080)
	first := waitBound(t, cs, "port-1")
	createPod(t, cs, "port-2", "100m", hostPort8080)
	if second := waitBound(t, cs, "port-2"); second == first || second == "notready" {
		t.Errorf("port-2: bound to %q, port-1 is on %q", second, first)
	}
	createPod(t, cs, "port-3", "100m", hostPort8080)
	waitUnschedulable(t, cs, "port-3", "0/3 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/not-ready: }, 2 node(s) didn't have free ports for the requested pod ports.")

	// A node change retries the unschedulable pod: "big" grows.
	n, err := cs.CoreV1().Nodes().Get(t.Context(), "big", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("16")
	n.Status.Capacity[v1.ResourceCPU] = resource.MustParse("16")
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := waitBound(t, cs, "huge"); got != "big" {
		t.Errorf("huge: bound to %q after big grew, want big", got)
	}
	waitPod(t, cs, "huge", "PodScheduled=True", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				return c.Status == v1.ConditionTrue
			}
		}
		return false
	})
	checkAttempts(t, reg)
}

// checkAttempts compares the attempt metrics with the test's pods: five
// bound, "huge" and "port-3" unschedulable at least once.
func checkAttempts(t *testing.T, reg metrics.KubeRegistry) {
	t.Helper()
	profile := map[string]string{"profile": testScheduler}
	var attempts, durations map[string]float64
	// The last binding is recorded just after the API has it.
	_ = wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		attempts = metricstest.By(t, reg, "scheduler_schedule_attempts_total", "result", profile)
		durations = metricstest.By(t, reg, "scheduler_scheduling_attempt_duration_seconds", "result", profile)
		return durations["scheduled"] >= 5, nil
	})
	if attempts["scheduled"] != 5 || durations["scheduled"] != 5 {
		t.Errorf("scheduled attempts: %v, durations observed: %v; want 5", attempts["scheduled"], durations["scheduled"])
	}
	if attempts["unschedulable"] < 2 || durations["unschedulable"] != attempts["unschedulable"] {
		t.Errorf("unschedulable attempts: %v, durations observed: %v; want at least 2, equal", attempts["unschedulable"], durations["unschedulable"])
	}
	if attempts["error"] != 0 {
		t.Errorf("error attempts: %v, want 0", attempts["error"])
	}
}
