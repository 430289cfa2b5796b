package controlplane_test

import (
	"bufio"
	"context"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestDeployments(t *testing.T) {
	ns := namespace(t)
	if out := mustKubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox:1", "--replicas=2"); out != "deployment.apps/web created\n" {
		t.Errorf("create deployment: got %q", out)
	}
	table := rows(mustKubectl(t, "-n", ns, "get", "deploy"))
	checkRow(t, "get deploy header", table[0], []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"})
	checkRow(t, "get deploy row", table[1], []string{"web", "0/2", "*", "0", "*"}) // UP-TO-DATE moves as the controllers work
	wide := rows(mustKubectl(t, "-n", ns, "get", "deploy", "-o", "wide"))
	checkRow(t, "wide header", wide[0], []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"})
	checkRow(t, "wide row", wide[1], []string{"web", "0/2", "*", "0", "*", "busybox", "busybox:1", "app=web"})

	if out := mustKubectl(t, "-n", ns, "scale", "deploy", "web", "--replicas=3"); out != "deployment.apps/web scaled\n" {
		t.Errorf("scale: got %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "get", "deploy", "web", "-o", "jsonpath={.spec.replicas}"); out != "3" {
		t.Errorf("replicas after scale: got %q", out)
	}

	// "all" covers pods, services and the workloads; not config maps.
	runPod(t, ns, "solo", "")
	mustKubectl(t, "-n", ns, "create", "service", "clusterip", "svc", "--tcp=80:80")
	mustKubectl(t, "-n", ns, "create", "configmap", "cfg", "--from-literal=a=b")
	inAll := strings.Fields(mustKubectl(t, "api-resources", "--categories=all", "-o", "name"))
	for _, r := range []string{"pods", "services", "deployments.apps", "replicasets.apps"} {
		if !slices.Contains(inAll, r) {
			t.Errorf("api-resources --categories=all lacks %s: %q", r, inAll)
		}
	}
	// The controllers create the deployment's replica set and pods
	// meanwhile: wait until the replica set shows up.
	var names []string
	deadline := time.Now().Add(60 * time.Second)
	for {
		names = names[:0]
		for _, r := range rows(mustKubectl(t, "-n", ns, "get", "all")) {
			if r[0] != "NAME" && r[0] != "" {
				names = append(names, r[0])
			}
		}
		if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "replicaset.apps/web-") }) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, want := range []string{"deployment.apps/web", "pod/solo", "service/svc"} {
		if !slices.Contains(names, want) {
			t.Errorf("get all: %q lacks %s", names, want)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "replicaset.apps/web-") }) {
		t.Errorf("get all: %q lacks the deployment's replica set", names)
	}
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "configmap/") }) {
		t.Errorf("get all: %q lists a config map", names)
	}
}

// proc is a kubectl running in the background; its stdout and stderr
// lines arrive on lines, which closes once it exited (err then set).
type proc struct {
	lines <-chan string
	err   error
}

func startKubectl(t *testing.T, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	cmd := exec.CommandContext(ctx, kubectlBin, append([]string{"--kubeconfig", adminConfig}, args...)...)
	cmd.Env = kubectlEnv()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	p := &proc{lines: lines}
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
			}
		}
		p.err = cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		for range lines {
		}
	})
	return p
}

// expect waits for a line that contains s.
func (p *proc) expect(t *testing.T, s string) string {
	t.Helper()
	timeout := time.After(eventTimeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				t.Fatalf("kubectl exited (%v) before printing %q", p.err, s)
			}
			t.Logf("kubectl: %s", l)
			if strings.Contains(l, s) {
				return l
			}
		case <-timeout:
			t.Fatalf("kubectl printed no %q within %s", s, eventTimeout)
		}
	}
}

// wait waits for kubectl to exit and returns its error.
func (p *proc) wait(t *testing.T) error {
	t.Helper()
	for l := range p.lines {
		t.Logf("kubectl: %s", l)
	}
	return p.err
}

func TestWatchPods(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "w", "")
	p := startKubectl(t, "-n", ns, "get", "pods", "-w", "--output-watch-events")
	checkRow(t, "watch header", rows(p.expect(t, "EVENT"))[0], []string{"EVENT", "NAME", "READY", "STATUS", "RESTARTS", "AGE"})
	checkRow(t, "added", rows(p.expect(t, "ADDED"))[0], []string{"ADDED", "w", "0/1", "Pending", "0", "*"})
	mustKubectl(t, "-n", ns, "label", "pod", "w", "a=b")
	checkRow(t, "modified", rows(p.expect(t, "MODIFIED"))[0], []string{"MODIFIED", "w", "0/1", "Pending", "0", "*"})
}

// watchStarted is in kubectl's -v=6 log once a watch request is answered.
const watchStarted = "watch=true"

func TestWait(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "x", "")
	// -v=6 logs requests: the label comes once kubectl wait is watching.
	p := startKubectl(t, "-n", ns, "wait", "--for=jsonpath={.metadata.labels.a}=b", "pod/x", "--timeout=30s", "-v=6")
	p.expect(t, watchStarted)
	mustKubectl(t, "-n", ns, "label", "pod", "x", "a=b")
	if l := p.expect(t, "condition met"); l != "pod/x condition met" {
		t.Errorf("wait --for=jsonpath: got %q", l)
	}
	if err := p.wait(t); err != nil {
		t.Errorf("wait --for=jsonpath: %v", err)
	}

	p = startKubectl(t, "-n", ns, "wait", "--for=delete", "pod/x", "--timeout=30s", "-v=6")
	p.expect(t, watchStarted)
	mustKubectl(t, "-n", ns, "delete", "pod", "x", "--wait=false")
	if l := p.expect(t, "condition met"); l != "pod/x condition met" {
		t.Errorf("wait --for=delete: got %q", l)
	}
	if err := p.wait(t); err != nil {
		t.Errorf("wait --for=delete: %v", err)
	}
}

func TestExplain(t *testing.T) {
	out := mustKubectl(t, "explain", "pod")
	if want := "KIND:       Pod\nVERSION:    v1\n\nDESCRIPTION:\n"; !strings.HasPrefix(out, want) {
		t.Errorf("explain pod: want prefix %q", want)
	}
	for _, s := range []string{"\nFIELDS:\n", "\n  spec\t<PodSpec>\n", "\n  status\t<PodStatus>\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("explain pod lacks %q", s)
		}
	}
	out = mustKubectl(t, "explain", "pod.spec.containers")
	if want := "KIND:       Pod\nVERSION:    v1\n\nFIELD: containers <[]Container>\n"; !strings.HasPrefix(out, want) {
		t.Errorf("explain pod.spec.containers: want prefix %q", want)
	}
	for _, s := range []string{"\nDESCRIPTION:\n", "\nFIELDS:\n", "\n  image\t<string>\n", "\n  name\t<string> -required-\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("explain pod.spec.containers lacks %q", s)
		}
	}
}

func TestDiscovery(t *testing.T) {
	if out, stderr, err := kubectl(t, "auth", "can-i", "create", "pods"); err != nil || out != "yes\n" {
		t.Errorf("auth can-i create pods: err=%v stdout=%q stderr=%q", err, out, stderr)
	}
	resources := rows(mustKubectl(t, "api-resources"))
	checkRow(t, "api-resources header", resources[0], []string{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"})
	for _, want := range [][]string{
		{"pods", "po", "v1", "true", "Pod"},
		{"deployments", "deploy", "apps/v1", "true", "Deployment"},
		{"namespaces", "ns", "v1", "false", "Namespace"},
		{"runtimeclasses", "node.k8s.io/v1", "false", "RuntimeClass"}, // no short names
	} {
		if !slices.ContainsFunc(resources, func(r []string) bool { return slices.Equal(r, want) }) {
			t.Errorf("api-resources lacks %q", want)
		}
	}
	out := mustKubectl(t, "version")
	if !regexp.MustCompile(`(?m)^Client Version: ` + regexp.QuoteMeta(kubectlVersion) + `\nKustomize Version: \S+\nServer Version: v1\.\d+\.\d+\S*\n$`).MatchString(out) {
		t.Errorf("kubectl version: got %q", out)
	}
}
