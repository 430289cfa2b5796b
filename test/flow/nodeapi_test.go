package flow

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// kubectlCmd prepares kubectl as the admin with the given stdin.
func kubectlCmd(ctx context.Context, stdin io.Reader, args ...string) *exec.Cmd {
	full := append([]string{"--kubeconfig", filepath.Join(dataDir, server.KubeconfigFile)}, args...)
	cmd := exec.CommandContext(ctx, kubectlBin, full...)
	cmd.Env = []string{"HOME=" + kubectlHome, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = stdin
	return cmd
}

// startKubectlOutput starts kubectl and returns its standard output;
// cleanup cancels ctx (with cancel) and waits for it.
func startKubectlOutput(t *testing.T, ctx context.Context, cancel context.CancelFunc, args ...string) io.Reader {
	t.Helper()
	cmd := kubectlCmd(ctx, nil, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return out
}

// TestKubectlLogsExecAttachPortForward drives the node API through the API
// server with upstream kubectl on real containerd.
func TestKubectlLogsExecAttachPortForward(t *testing.T) {
	a := newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/logger", "pod/crasher", "pod/reader", "pod/web")
	mustKubectl(t, "run", "logger", "--image="+framework.BusyboxImage, "--",
		"sh", "-c", "trap 'exit 0' TERM; i=0; while true; do echo line $i; i=$((i+1)); sleep 0.2; done & wait")
	mustKubectl(t, "run", "crasher", "--image="+framework.BusyboxImage, "--", "sh", "-c", "echo crashed-once; exit 1")
	mustKubectl(t, "run", "web", "--image="+framework.BusyboxImage, "--", "sh", "-c",
		"trap 'exit 0' TERM; mkdir /www; echo forwarded > /www/index.html; httpd -f -p 8080 -h /www & wait")
	mustKubectl(t, "apply", "-f", writeTemp(t, "reader.yaml", `apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: `+framework.BusyboxImage+`
    stdin: true
    command: ["sh", "-c", "read x; echo got-$x; sleep 3600"]
`))
	for _, p := range []string{"logger", "web", "reader"} {
		waitPodRunning(t, p)
	}

	t.Run("logs", func(t *testing.T) {
		waitFor(t, apiTimeout, "three log lines", func() (bool, error) {
			out, _, err := kubectl(t, "logs", "logger")
			return strings.Count(out, "\n") >= 3, err
		})
		if out := mustKubectl(t, "logs", "logger", "--tail=2"); strings.Count(out, "\n") != 2 {
			t.Errorf("--tail=2 gave %q", out)
		}
		ts := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+Z line \d+$`)
		if out := strings.TrimSpace(mustKubectl(t, "logs", "logger", "--tail=1", "--timestamps")); !ts.MatchString(out) {
			t.Errorf("--timestamps gave %q", out)
		}
		if out := mustKubectl(t, "logs", "logger", "--since=1h", "--limit-bytes=5"); out != "line " {
			t.Errorf("--limit-bytes=5 gave %q", out)
		}
	})

	t.Run("logs -f sees new lines", func(t *testing.T) {
		last := lastLine(mustKubectl(t, "logs", "logger", "--tail=1"))
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		sc := bufio.NewScanner(startKubectlOutput(t, ctx, cancel, "logs", "-f", "logger", "--tail=1"))
		for sc.Scan() {
			if n := lineNumber(sc.Text()); n > last+2 {
				return // lines written after the follow began
			}
		}
		t.Errorf("logs -f ended without new lines (last before: %d): %v", last, sc.Err())
	})

	t.Run("logs --previous", func(t *testing.T) {
		waitFor(t, apiTimeout, "the crasher to restart", func() (bool, error) {
			out, _, err := kubectl(t, "get", "pod", "crasher", "-o", "jsonpath={.status.containerStatuses[0].restartCount}")
			n, _ := strconv.Atoi(out)
			return n >= 1, err
		})
		if out := mustKubectl(t, "logs", "crasher", "--previous"); strings.TrimSpace(out) != "crashed-once" {
			t.Errorf("logs --previous: %q", out)
		}
	})

	t.Run("exec with stdin and exit code", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		var stdout, stderr bytes.Buffer
		cmd := kubectlCmd(ctx, strings.NewReader("hello through exec\n"), "exec", "-i", "logger", "--", "sh", "-c", "cat; exit 3")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if stdout.String() != "hello through exec\n" {
			t.Errorf("exec stdout %q (stderr %q)", stdout.String(), stderr.String())
		}
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
			t.Errorf("exec exit: %v, want exit code 3 (stderr %q)", err, stderr.String())
		}
	})

	t.Run("exec -it through a pty", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		// script(1) gives kubectl a terminal, as a user's shell would.
		line := fmt.Sprintf("%s --kubeconfig %s exec -it logger -- tty", kubectlBin, filepath.Join(dataDir, server.KubeconfigFile))
		cmd := exec.CommandContext(ctx, "script", "-qec", line, "/dev/null")
		cmd.Env = []string{"HOME=" + kubectlHome, "PATH=" + os.Getenv("PATH"), "TERM=dumb"}
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "/dev/pts/") {
			t.Errorf("exec -it tty: %v %q", err, out)
		}
	})

	t.Run("attach", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		var stdout bytes.Buffer
		cmd := kubectlCmd(ctx, strings.NewReader("ping\n"), "attach", "-i", "reader")
		cmd.Stdout = &stdout
		_ = cmd.Start()
		waitFor(t, apiTimeout, "the attached container's answer", func() (bool, error) {
			out, _, err := kubectl(t, "logs", "reader")
			return strings.Contains(out, "got-ping"), err
		})
		cancel()
		_ = cmd.Wait()
	})

	t.Run("port-forward", func(t *testing.T) {
		port, err := framework.NewFreePort()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
		defer cancel()
		cmd := kubectlCmd(ctx, nil, "port-forward", "pod/web", fmt.Sprintf("%d:8080", port))
		var pfOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &pfOut, &pfOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cancel(); _ = cmd.Wait() }()
		url := fmt.Sprintf("http://127.0.0.1:%d/index.html", port)
		waitFor(t, apiTimeout, "HTTP through port-forward", func() (bool, error) {
			resp, err := http.Get(url)
			if err != nil {
				return false, fmt.Errorf("%v (kubectl: %s)", err, pfOut.String())
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return string(b) == "forwarded\n", fmt.Errorf("body %q", b)
		})
	})

	t.Run("metrics through nodes/proxy", func(t *testing.T) {
		out := mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics")
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(strings.NewReader(out))
		if err != nil {
			t.Fatalf("/metrics does not parse: %v", err)
		}
		for _, name := range []string{"kubelet_running_pods", "kubelet_runtime_operations_total", "kubelet_pod_start_duration_seconds", "kubelet_node_name"} {
			if families[name] == nil {
				t.Errorf("/metrics lacks %s", name)
			}
		}
		if h := families["kubelet_pod_start_duration_seconds"]; h != nil && h.Metric[0].GetHistogram().GetSampleCount() < 3 {
			t.Errorf("pod start histogram counts %d pods, want at least the 3 started here", h.Metric[0].GetHistogram().GetSampleCount())
		}
		res := mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+nodeName+"/proxy/metrics/resource")
		if !strings.Contains(res, `container_memory_working_set_bytes{container="logger",namespace="default",pod="logger"}`) {
			t.Errorf("/metrics/resource lacks the logger container:\n%s", res)
		}
		// The pod's own usage is its pod cgroup's, as cAdvisor gives the kubelet.
		for _, series := range []string{`pod_cpu_usage_seconds_total{namespace="default",pod="logger"}`, `pod_memory_working_set_bytes{namespace="default",pod="logger"}`} {
			if !strings.Contains(res, series) {
				t.Errorf("/metrics/resource lacks %s:\n%s", series, res)
			}
		}
	})

	t.Run("kubectl top", func(t *testing.T) {
		waitFor(t, apiTimeout, "kubectl top pod logger", func() (bool, error) {
			out, stderr, err := kubectl(t, "top", "pod", "logger", "--no-headers")
			f := strings.Fields(out)
			return err == nil && len(f) == 3 && strings.HasSuffix(f[1], "m") && strings.HasSuffix(f[2], "Mi"), fmt.Errorf("%v %s", err, stderr)
		})
		waitFor(t, apiTimeout, "kubectl top node", func() (bool, error) {
			out, stderr, err := kubectl(t, "top", "node", nodeName, "--no-headers")
			return err == nil && strings.HasPrefix(out, nodeName), fmt.Errorf("%v %s", err, stderr)
		})
	})

	t.Run("node API refuses strangers", func(t *testing.T) {
		// The kubelet's message names the attributes it asked for.
		checkRefusesStrangers(t, a.SecurePort, "/pods", "Forbidden (user=system:serviceaccount:default:default, verb=get, resource=nodes, subresource=proxy)")
	})
}

func lastLine(s string) int { return lineNumber(strings.TrimSpace(s)) }

// lineNumber parses "line N".
func lineNumber(s string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(s), "line "))
	if err != nil {
		return -1
	}
	return n
}

// checkRefusesStrangers checks that the node API answers path with 401 to
// an anonymous client and with 403 (the body containing forbidden) to a
// service account, whose token authenticates but is not allowed.
func checkRefusesStrangers(t *testing.T, port int, path, forbidden string) {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	url := fmt.Sprintf("https://127.0.0.1:%d%s", port, path)
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("anonymous GET %s: %s, want 401", path, resp.Status)
	}
	tok, err := admin.CoreV1().ServiceAccounts("default").CreateToken(context.Background(), "default",
		&authv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+tok.Status.Token)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(b), forbidden) {
		t.Errorf("service account GET %s: %s %q, want 403 with %q", path, resp.Status, b, forbidden)
	}
}
