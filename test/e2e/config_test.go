package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// One pod reports what its containers see; each line is checked.
func TestContainerConfigReachesTheContainer(t *testing.T) {
	a := newAgent(t)
	script := strings.Join([]string{
		"echo uid=$(id -u) gid=$(id -g)",
		"echo hostname=$(hostname)",
		"echo mem=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)",
		"echo shares=$(cat /sys/fs/cgroup/cpu/cpu.shares)",
		"echo quota=$(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us)",
		"echo hosts=$(grep -c cfg /etc/hosts)",
		"echo search=$(grep ^search /etc/resolv.conf)",
		"echo ndots=$(grep -c ndots:3 /etc/resolv.conf)",
		"echo rootfs=$(touch /x 2>/dev/null && echo rw || echo ro)",
		"trap 'exit 0' TERM; while true; do sleep 1; done",
	}, "; ")
	if err := a.WriteManifest("cfg.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: cfg}
spec:
  terminationGracePeriodSeconds: 2
  hostname: custom-host
  dnsConfig:
    searches: [example.test]
    options: [{name: ndots, value: "3"}]
  securityContext: {runAsUser: 1234, runAsGroup: 4321}
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
    resources:
      requests: {cpu: 250m, memory: 32Mi}
      limits: {cpu: 500m, memory: 64Mi}
    securityContext: {readOnlyRootFilesystem: true, allowPrivilegeEscalation: false}
`, framework.BusyboxImage, script)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("cfg", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %s, want Burstable", p.Status.QOSClass)
	}
	for prefix, want := range map[string]string{
		"uid=":      "uid=1234 gid=4321",
		"hostname=": "hostname=custom-host",
		"mem=":      "mem=" + strconv.Itoa(64<<20),
		"shares=":   "shares=256",
		"quota=":    "quota=50000",
		"hosts=":    "hosts=0", // the pod's /etc/hosts names custom-host, not the pod
		"search=":   "search=search example.test",
		"ndots=":    "ndots=1",
		"rootfs=":   "rootfs=ro",
	} {
		if got := waitLog(t, a, p, "c", 0, prefix); got != want {
			t.Errorf("container saw %q, want %q", got, want)
		}
	}
}

func TestTerminationMessages(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("msg.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: msg}
spec:
  restartPolicy: Never
  containers:
  - name: file
    image: %[1]s
    command: ["sh", "-c", "echo -n written > /dev/termination-log; exit 0"]
  - name: fallback
    image: %[1]s
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["sh", "-c", "echo last words; exit 4"]
  - name: custom
    image: %[1]s
    terminationMessagePath: /tmp/why
    command: ["sh", "-c", "echo -n custom path > /tmp/why"]
`, framework.BusyboxImage)); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("msg", podTimeout, phase(v1.PodFailed))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"file": "written", "fallback": "last words\n", "custom": "custom path"} {
		term := status(t, p, name).State.Terminated
		if term == nil || term.Message != want {
			t.Errorf("container %s: termination %+v, want message %q", name, term, want)
		}
	}
}

func TestHostNetworkAndHostPort(t *testing.T) {
	a := newAgent(t)
	port, err := framework.NewFreePort()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.WriteManifest("ports.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: ports}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: web
    image: %[1]s
    command: ["sh", "-c", "mkdir /tmp/www && echo served-by-pod > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
    ports: [{containerPort: 8080, hostPort: %[2]d, hostIP: 127.0.0.1}]
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %[1]s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, framework.BusyboxImage, port)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("ports", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	hn, err := a.WaitPod("hostnet", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	if hn.Status.PodIP == "" || hn.Status.PodIP != hn.Status.HostIP {
		t.Errorf("hostNetwork pod IP %q should be the host IP %q", hn.Status.PodIP, hn.Status.HostIP)
	}
	body, err := getWithRetry(fmt.Sprintf("http://127.0.0.1:%d/", port), podTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(body) != "served-by-pod" {
		t.Errorf("hostPort answered %q", body)
	}
}

func getWithRetry(url string, timeout time.Duration) (string, error) {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(b), nil
			}
			err = fmt.Errorf("status %s, read %v", resp.Status, rerr)
		} else {
			cancel()
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("GET %s: %w", url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestDeadSandboxIsRecreated(t *testing.T) {
	a := newAgent(t)
	if err := a.WriteManifest("phoenix.yaml", imagePod("phoenix", framework.BusyboxImage, "IfNotPresent")); err != nil {
		t.Fatal(err)
	}
	p, err := a.WaitPod("phoenix", podTimeout, running)
	if err != nil {
		t.Fatal(err)
	}
	sbs := sandboxIDs(t, string(p.UID))
	if len(sbs) != 1 {
		t.Fatalf("want one sandbox, got %v", sbs)
	}
	// The sandbox dies under the agent (as when its pause process is killed).
	if err := cri.StopPodSandbox(context.Background(), sbs[0]); err != nil {
		t.Fatal(err)
	}
	after, err := a.WaitPod("phoenix", podTimeout, func(q *v1.Pod) bool {
		return running(q) && q.Status.ContainerStatuses[0].ContainerID != p.Status.ContainerStatuses[0].ContainerID
	})
	if err != nil {
		t.Fatal(err)
	}
	if cs := after.Status.ContainerStatuses[0]; cs.RestartCount != 1 {
		t.Errorf("restartCount %d, want 1 after the sandbox was recreated", cs.RestartCount)
	}
	if got := sandboxIDs(t, string(p.UID)); len(got) == 0 || got[0] == sbs[0] {
		t.Errorf("no new sandbox: %v", got)
	}
}

func TestReadOnlyAPIHealthz(t *testing.T) {
	a := newAgent(t)
	body, err := getWithRetry(fmt.Sprintf("http://127.0.0.1:%d/healthz", a.Port), podTimeout)
	if err != nil || body != "ok" {
		t.Errorf("healthz: %q %v", body, err)
	}
}
