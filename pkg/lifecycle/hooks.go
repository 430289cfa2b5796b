package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/probe"
)

// userAgent is what httpGet hooks send, upstream's "kube-lifecycle/<major>.<minor>".
const userAgent = "kube-lifecycle/1.37"

// Runner runs hook handlers in containers.
type Runner struct {
	Exec probe.Execer
	// HTTP sends httpGet hooks (default: a client without keep-alives that
	// does not verify certificates, as probes).
	HTTP *http.Client
}

// Run runs handler h for container c of pod (running as containerID, the
// runtime's ID, in a pod whose IP is podIP) until it ends or ctx does. On
// failure it returns the kubelet's event message and the error.
func (r *Runner) Run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) (string, error) {
	switch {
	case h.Exec != nil:
		out, err := r.runExec(ctx, containerID, h.Exec.Command)
		if err != nil {
			return fmt.Sprintf("Exec lifecycle hook (%v) for Container %q in Pod %q failed - error: %v, message: %q",
				h.Exec.Command, c.Name, podString(pod), err, out), err
		}
	case h.HTTPGet != nil:
		if err := r.runHTTP(ctx, c, podIP, h.HTTPGet); err != nil {
			return fmt.Sprintf("HTTP lifecycle hook (%s) for Container %q in Pod %q failed - error: %v",
				h.HTTPGet.Path, c.Name, podString(pod), err), err
		}
	case h.Sleep != nil:
		if err := sleep(ctx, time.Duration(h.Sleep.Seconds)*time.Second); err != nil {
			return fmt.Sprintf("Sleep lifecycle hook (%d) for Container %q in Pod %q failed - error: %v",
				h.Sleep.Seconds, c.Name, podString(pod), err), err
		}
	default:
		err := fmt.Errorf("invalid handler: %v", h)
		return fmt.Sprintf("Cannot run handler: %v", err), err
	}
	return "", nil
}

// runExec runs the command without a timeout of its own (the caller's ctx
// bounds it): a non-zero exit is an error carrying stderr, as upstream's
// RunInContainer.
func (r *Runner) runExec(ctx context.Context, id string, cmd []string) (string, error) {
	res, err := r.Exec.ExecSync(ctx, id, cmd, 0)
	if err != nil {
		return "", err
	}
	out := string(res.Stdout) + string(res.Stderr)
	if res.ExitCode != 0 {
		return out, fmt.Errorf("command '%s' exited with %d: %s", strings.Join(cmd, " "), res.ExitCode, res.Stderr)
	}
	return out, nil
}

// runHTTP sends the GET; only a transport error fails the hook (upstream
// ignores the status code of hook responses).
func (r *Runner) runHTTP(ctx context.Context, c *v1.Container, podIP string, a *v1.HTTPGetAction) error {
	port, err := probe.ResolvePort(a.Port, c)
	if err != nil {
		return err
	}
	req, err := probe.HTTPRequest(ctx, a, podIP, port)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", userAgent)
	client := r.HTTP
	if client == nil {
		client = probe.NewHTTPClient(0)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	return resp.Body.Close()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return errors.New("container terminated before sleep hook finished")
	case <-t.C:
		return nil
	}
}

// podString is the kubelet's format.Pod: name_namespace(uid).
func podString(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}
