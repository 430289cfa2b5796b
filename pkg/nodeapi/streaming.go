package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/proxy"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// streamRetryAfter is what a 429 from the runtime asks to wait: the
// lifetime of a pending streaming request (the kubelet's cacheTTL).
const streamRetryAfter = "60"

// streamOptions are the exec/attach query flags.
type streamOptions struct {
	stdin, stdout, stderr, tty bool
}

// parseStreamOptions reads input, output, error and tty ("1" is true), as
// the kubelet's remotecommand.NewOptions.
func parseStreamOptions(q url.Values) (streamOptions, error) {
	o := streamOptions{
		stdin:  q.Get(v1.ExecStdinParam) == "1",
		stdout: q.Get(v1.ExecStdoutParam) == "1",
		stderr: q.Get(v1.ExecStderrParam) == "1",
		tty:    q.Get(v1.ExecTTYParam) == "1",
	}
	if o.tty && o.stderr {
		o.stderr = false // a terminal has one output stream
	}
	if !o.stdin && !o.stdout && !o.stderr {
		return o, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return o, nil
}

// exec asks the runtime for an exec session and proxies the client's
// upgraded connection to it.
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	s.stream(w, r, func(ctx context.Context) (string, error) {
		id, err := runningContainerID(pod, r.PathValue("container"))
		if err != nil {
			return "", err
		}
		resp, err := s.cfg.Runtime.Exec(ctx, &criv1.ExecRequest{
			ContainerId: id, Cmd: r.URL.Query()[v1.ExecCommandParam],
			Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr, Tty: opts.tty,
		})
		return resp.GetUrl(), err
	})
}

// attach attaches to the container's main process. Whether it has a
// terminal was fixed when it started: the spec's tty decides, not the
// query.
func (s *Server) attach(w http.ResponseWriter, r *http.Request) {
	opts, err := parseStreamOptions(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	name := r.PathValue("container")
	s.stream(w, r, func(ctx context.Context) (string, error) {
		spec := containerSpec(pod, name)
		if spec == nil {
			return "", fmt.Errorf("container %s not found in pod %s", name, podFullName(pod))
		}
		id, err := runningContainerID(pod, name)
		if err != nil {
			return "", err
		}
		resp, err := s.cfg.Runtime.Attach(ctx, &criv1.AttachRequest{
			ContainerId: id, Stdin: opts.stdin, Stdout: opts.stdout, Stderr: opts.stderr && !spec.TTY, Tty: spec.TTY,
		})
		return resp.GetUrl(), err
	})
}

// portForward forwards to the pod's newest ready sandbox. SPDY clients
// name the ports per stream; WebSocket clients in the query.
func (s *Server) portForward(w http.ResponseWriter, r *http.Request) {
	ports, err := portForwardPorts(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod, ok := s.streamPod(w, r)
	if !ok {
		return
	}
	s.stream(w, r, func(ctx context.Context) (string, error) {
		id, err := s.readySandbox(ctx, pod.UID)
		if err != nil {
			return "", err
		}
		resp, err := s.cfg.Runtime.PortForward(ctx, &criv1.PortForwardRequest{PodSandboxId: id, Port: ports})
		return resp.GetUrl(), err
	})
}

// streamPod finds the request's pod, checking the UID when the path has
// one; it answers 404 itself.
func (s *Server) streamPod(w http.ResponseWriter, r *http.Request) (*v1.Pod, bool) {
	pod := s.pod(r.PathValue("namespace"), r.PathValue("pod"))
	if pod == nil {
		http.Error(w, "pod does not exist", http.StatusNotFound)
		return nil, false
	}
	if uid := r.PathValue("uid"); uid != "" && types.UID(uid) != pod.UID {
		http.Error(w, "pod not found", http.StatusNotFound)
		return nil, false
	}
	return pod, true
}

// stream gets the runtime's streaming URL and proxies to it; the kubelet
// proxies by default rather than redirecting the client.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, getURL func(ctx context.Context) (string, error)) {
	ctx, cancel := context.WithTimeout(r.Context(), runtimeCallTimeout)
	raw, err := getURL(ctx)
	cancel()
	if err != nil {
		writeStreamingError(w, err)
		return
	}
	u, err := url.Parse(raw)
	if err != nil {
		http.Error(w, fmt.Sprintf("runtime streaming URL %q: %v", raw, err), http.StatusInternalServerError)
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, proxyResponder{s})
	h.ServeHTTP(w, r)
}

// proxyResponder reports proxy failures before the connection is
// hijacked.
type proxyResponder struct{ s *Server }

func (p proxyResponder) Error(w http.ResponseWriter, r *http.Request, err error) {
	p.s.log.Warn("error while proxying a stream", "path", r.URL.Path, "err", err)
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

// writeStreamingError maps runtime errors as the kubelet's streaming
// server does: NotFound is 404, ResourceExhausted (too many pending
// sessions) 429, anything else 500.
func writeStreamingError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch status.Code(err) {
	case codes.NotFound:
		code = http.StatusNotFound
	case codes.ResourceExhausted:
		w.Header().Set("Retry-After", streamRetryAfter)
		code = http.StatusTooManyRequests
	}
	http.Error(w, err.Error(), code)
}

// runningContainerID is the runtime ID of the named container if it runs.
func runningContainerID(pod *v1.Pod, name string) (string, error) {
	cs := containerStatus(pod, name)
	if cs == nil || cs.State.Running == nil || cs.ContainerID == "" {
		return "", fmt.Errorf("container not found (%q)", name)
	}
	return runtimeID(cs.ContainerID), nil
}

// readySandbox is the pod's newest ready sandbox.
func (s *Server) readySandbox(ctx context.Context, uid types.UID) (string, error) {
	sandboxes, err := s.cfg.Runtime.ListPodSandbox(ctx, &criv1.PodSandboxFilter{
		LabelSelector: map[string]string{runtime.LabelPodUID: string(uid)},
		State:         &criv1.PodSandboxStateValue{State: criv1.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return "", err
	}
	if len(sandboxes) == 0 {
		return "", status.Errorf(codes.NotFound, "no ready sandbox for pod %q", uid)
	}
	sort.Slice(sandboxes, func(i, j int) bool { return sandboxes[i].CreatedAt > sandboxes[j].CreatedAt })
	return sandboxes[0].Id, nil
}

// portForwardPorts reads the WebSocket protocol's "port" parameters, as
// the kubelet's portforward.NewV4Options; SPDY requests carry none.
func portForwardPorts(r *http.Request) ([]int32, error) {
	if !isWebSocketRequest(r) {
		return nil, nil
	}
	values := r.URL.Query()[v1.PortHeader]
	if len(values) == 0 {
		return nil, fmt.Errorf("query parameter %q is required", v1.PortHeader)
	}
	var ports []int32
	for _, v := range values {
		if v == "" {
			return nil, fmt.Errorf("query parameter %q cannot be empty", v1.PortHeader)
		}
		for _, p := range strings.Split(v, ",") {
			n, err := strconv.ParseUint(p, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("unable to parse %q as a port: %v", v, err)
			}
			if n < 1 {
				return nil, fmt.Errorf("port %q must be > 0", v)
			}
			ports = append(ports, int32(n))
		}
	}
	return ports, nil
}

func isWebSocketRequest(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket") &&
		strings.Contains(strings.ToLower(r.Header.Get("Connection")), "upgrade")
}

func podFullName(pod *v1.Pod) string { return pod.Name + "_" + pod.Namespace }
