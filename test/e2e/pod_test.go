package e2e

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/test/framework"
)

const podTimeout = 60 * time.Second

func running(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

func phase(ph v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == ph }
}

func status(t *testing.T, p *v1.Pod, name string) v1.ContainerStatus {
	t.Helper()
	for _, cs := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	t.Fatalf("pod %s has no status for container %s", p.Name, name)
	return v1.ContainerStatus{}
}

// readLog returns the text of a container's CRI-format log file.
func readLog(t *testing.T, a *framework.Agent, p *v1.Pod, container string, restart int) string {
	t.Helper()
	path := filepath.Join(nart.PodLogsDir(a.LogsDir, p.Namespace, p.Name, p.UID), nart.ContainerLogPath(container, restart))
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read container log: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, " ", 4)
		if len(parts) != 4 || (parts[1] != "stdout" && parts[1] != "stderr") {
			t.Fatalf("log line not in CRI format: %q", l)
		}
		lines = append(lines, parts[3])
	}
	return strings.Join(lines, "\n")
}

func TestTwoContainerPodRunsWithKubeletLabels(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("web.yaml", `
apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: e2e
  labels: {app: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: `+framework.BusyboxImage+`
    command: ["sh", "-c", "echo greeting=$(GREETING) pod=$POD_NAME ns=$POD_NS ip=$POD_IP node=$NODE; exec sleep 3600"]
    env:
    - {name: WHO, value: world}
    - {name: GREETING, value: "hello $(WHO)"}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
  - name: sidecar
    image: `+framework.BusyboxImage+`
    workingDir: /tmp
    args: ["sh", "-c", "echo cwd=$(pwd); exec sleep 3600"]
`); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("web", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "web-"+a.NodeName || p.Spec.NodeName != a.NodeName {
		t.Errorf("static pod name/node = %s/%s, want web-%s on %s", p.Name, p.Spec.NodeName, a.NodeName, a.NodeName)
	}
	if _, subnet, _ := net.ParseCIDR(ctrd.PodSubnet); p.Status.PodIP == "" || !subnet.Contains(net.ParseIP(p.Status.PodIP)) {
		t.Errorf("podIP = %q, want an address of the instance's CNI network %s", p.Status.PodIP, ctrd.PodSubnet)
	}
	for _, c := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady, v1.PodInitialized, v1.PodScheduled, v1.PodReadyToStartContainers} {
		if !hasCondition(p, c, v1.ConditionTrue) {
			t.Errorf("condition %s not True: %+v", c, p.Status.Conditions)
		}
	}
	if p.Status.QOSClass != v1.PodQOSBestEffort || p.Status.StartTime == nil {
		t.Errorf("qosClass=%s startTime=%v", p.Status.QOSClass, p.Status.StartTime)
	}

	// The runtime carries the kubelet's labels, so crictl shows NAME and NAMESPACE.
	sbs, err := cri.ListPodSandbox(context.Background(), &criv1.PodSandboxFilter{
		LabelSelector: map[string]string{nart.LabelPodUID: string(p.UID)},
	})
	if err != nil || len(sbs) != 1 {
		t.Fatalf("sandboxes for pod: %v, %v", sbs, err)
	}
	sb := sbs[0]
	if sb.Metadata.Name != p.Name || sb.Metadata.Namespace != "e2e" || sb.Labels[nart.LabelPodName] != p.Name ||
		sb.Labels[nart.LabelPodNamespace] != "e2e" || sb.Labels["app"] != "web" {
		t.Errorf("sandbox metadata/labels wrong: %+v %v", sb.Metadata, sb.Labels)
	}
	cs := containersOf(t, string(p.UID))
	if len(cs) != 2 {
		t.Fatalf("want 2 containers, got %d", len(cs))
	}
	for _, c := range cs {
		name := c.Labels[nart.LabelContainerName]
		if name != c.Metadata.Name || c.Labels[nart.LabelPodName] != p.Name || c.Labels[nart.LabelPodNamespace] != "e2e" {
			t.Errorf("container labels wrong: %v", c.Labels)
		}
		if c.Annotations[nart.AnnotationRestartCount] != "0" || c.Annotations[nart.AnnotationContainerHash] == "" ||
			c.Annotations[nart.AnnotationTerminationMessagePath] != "/dev/termination-log" {
			t.Errorf("container annotations wrong: %v", c.Annotations)
		}
		if c.State != criv1.ContainerState_CONTAINER_RUNNING {
			t.Errorf("container %s state %s", name, c.State)
		}
	}

	// env, $(VAR) expansion, fieldRefs, command and args, read back from the logs.
	want := "greeting=hello world pod=web-" + a.NodeName + " ns=e2e ip=" + p.Status.PodIP + " node=" + a.NodeName
	if got := waitLog(t, a, p, "main", 0, "greeting="); got != want {
		t.Errorf("main logged %q, want %q", got, want)
	}
	if got := waitLog(t, a, p, "sidecar", 0, "cwd="); got != "cwd=/tmp" {
		t.Errorf("sidecar logged %q, want cwd=/tmp", got)
	}
}

// waitLog waits until the container's log has a line with prefix.
func waitLog(t *testing.T, a *framework.Agent, p *v1.Pod, c string, restart int, prefix string) string {
	t.Helper()
	deadline := time.Now().Add(podTimeout)
	for {
		for _, l := range strings.Split(readLog(t, a, p, c, restart), "\n") {
			if strings.HasPrefix(l, prefix) {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("log of %s has no line starting with %q", c, prefix)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func hasCondition(p *v1.Pod, t v1.PodConditionType, s v1.ConditionStatus) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == s
		}
	}
	return false
}
