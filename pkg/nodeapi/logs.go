package nodeapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// logRequest is a parsed /containerLogs query (v1.PodLogOptions).
type logRequest struct {
	opts     runtime.LogOptions
	previous bool
}

// errBadQuery and errInvalidQuery carry upstream's replies: a query that
// does not decode is a 400, one that does not validate a 422.
var (
	errBadQuery     = errors.New(`{"message": "Unable to decode query."}`)
	errInvalidQuery = errors.New(`{"message": "Invalid request."}`)
)

// containerLogs serves a container's log from its CRI log file: the
// current instance's, or with previous the one before the last restart.
func (s *Server) containerLogs(w http.ResponseWriter, r *http.Request) {
	ns, name, container := r.PathValue("namespace"), r.PathValue("pod"), r.PathValue("container")
	req, err := parseLogQuery(r.URL.Query(), time.Now())
	switch {
	case errors.Is(err, errInvalidQuery):
		http.Error(w, err.Error(), http.StatusUnprocessableEntity)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	pod := s.pod(ns, name)
	if pod == nil {
		http.Error(w, fmt.Sprintf("pod %q does not exist", name), http.StatusNotFound)
		return
	}
	if containerSpec(pod, container) == nil {
		http.Error(w, fmt.Sprintf("container %q not found in pod %q", container, name), http.StatusNotFound)
		return
	}
	id, err := logContainerID(pod, container, req.previous)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	path, err := s.logPath(r.Context(), id)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.streamLog(w, r, path, id, req.opts)
}

// logPath asks the runtime where the container's log file is.
func (s *Server) logPath(ctx context.Context, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	defer cancel()
	resp, err := s.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("unable to retrieve container logs for %s: %w", id, err)
	}
	path := resp.GetStatus().GetLogPath()
	if path == "" {
		return "", fmt.Errorf("container %s has no log file", id)
	}
	return path, nil
}

// streamLog writes the log, flushing each write. A missing file is
// still a 400: headers go out only once the file is known to exist.
func (s *Server) streamLog(w http.ResponseWriter, r *http.Request, path, id string, opts runtime.LogOptions) {
	if _, err := os.Stat(path); err != nil {
		http.Error(w, fmt.Sprintf("container log: %v", err), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	if opts.Follow {
		// A follower may wait long for the first line: answer now.
		_, _ = fw.Write(nil)
	}
	err := runtime.ReadLogs(r.Context(), path, id, opts, s.cfg.Runtime, fw, fw)
	switch {
	case err == nil || r.Context().Err() != nil:
	case !fw.wrote:
		http.Error(w, err.Error(), http.StatusBadRequest)
	default:
		s.log.Warn("container log stream ended", "container", id, "err", err)
	}
}

// flushWriter sends each write to the client at once.
type flushWriter struct {
	w     http.ResponseWriter
	rc    *http.ResponseController
	wrote bool
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.wrote = true
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.rc.Flush()
}

// logContainerID picks the runtime container whose log is asked for, as
// the kubelet's validateContainerLogStatus does.
func logContainerID(pod *v1.Pod, container string, previous bool) (string, error) {
	cs := containerStatus(pod, container)
	if cs == nil {
		return "", fmt.Errorf("container %q in pod %q is not available", container, pod.Name)
	}
	last := cs.LastTerminationState.Terminated
	state := cs.State
	switch {
	case previous:
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("previous terminated container %q in pod %q not found", container, pod.Name)
		}
		return runtimeID(last.ContainerID), nil
	case state.Running != nil:
		return runtimeID(cs.ContainerID), nil
	case state.Terminated != nil && state.Terminated.ContainerID != "":
		return runtimeID(state.Terminated.ContainerID), nil
	case state.Terminated != nil || last != nil:
		// The next instance did not start: show the last one that ran.
		if last == nil || last.ContainerID == "" {
			return "", fmt.Errorf("container %q in pod %q is terminated", container, pod.Name)
		}
		return runtimeID(last.ContainerID), nil
	case state.Waiting != nil:
		return "", waitingError(container, pod.Name, state.Waiting.Reason)
	}
	return "", fmt.Errorf("container %q in pod %q is waiting to start - no logs yet", container, pod.Name)
}

func waitingError(container, pod, reason string) error {
	switch reason {
	case "ErrImagePull":
		return fmt.Errorf("container %q in pod %q is waiting to start: image can't be pulled", container, pod)
	case "ImagePullBackOff":
		return fmt.Errorf("container %q in pod %q is waiting to start: trying and failing to pull image", container, pod)
	}
	return fmt.Errorf("container %q in pod %q is waiting to start: %s", container, pod, reason)
}

// parseLogQuery decodes and validates the query as the kubelet decodes
// v1.PodLogOptions (including the old "tail" parameter).
func parseLogQuery(q url.Values, now time.Time) (*logRequest, error) {
	if tail := q.Get("tail"); tail != "" {
		q = cloneValues(q)
		q.Del("tail")
		if tail != "all" {
			q.Set("tailLines", tail)
		}
	}
	req := &logRequest{previous: queryBool(q, "previous")}
	req.opts.Follow, req.opts.Timestamps = queryBool(q, "follow"), queryBool(q, "timestamps")
	var sinceSeconds *int64
	var err error
	for _, p := range []struct {
		name string
		dst  **int64
	}{{"tailLines", &req.opts.TailLines}, {"limitBytes", &req.opts.LimitBytes}, {"sinceSeconds", &sinceSeconds}} {
		if *p.dst, err = queryInt64(q, p.name); err != nil {
			return nil, errBadQuery
		}
	}
	var sinceTime *metav1.Time
	if v := q.Get("sinceTime"); v != "" {
		sinceTime = &metav1.Time{}
		if err := sinceTime.UnmarshalQueryParameter(v); err != nil {
			return nil, errBadQuery
		}
	}
	if err := validateLogQuery(req.opts, sinceSeconds, sinceTime); err != nil {
		return nil, err
	}
	if sinceSeconds != nil {
		req.opts.Since = now.Add(-time.Duration(*sinceSeconds) * time.Second)
	}
	if sinceTime != nil && sinceTime.After(req.opts.Since) {
		req.opts.Since = sinceTime.Time
	}
	return req, nil
}

// validateLogQuery applies ValidatePodLogOptions' rules.
func validateLogQuery(o runtime.LogOptions, sinceSeconds *int64, sinceTime *metav1.Time) error {
	switch {
	case o.TailLines != nil && *o.TailLines < 0,
		o.LimitBytes != nil && *o.LimitBytes < 1,
		sinceSeconds != nil && sinceTime != nil,
		sinceSeconds != nil && *sinceSeconds < 1:
		return errInvalidQuery
	}
	return nil
}

// queryBool reads a boolean the way API query parameters convert: absent,
// "0" and "false" are false, anything else (even "") true.
func queryBool(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

func queryInt64(q url.Values, name string) (*int64, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("query parameter %s: %w", name, err)
	}
	return &n, nil
}

func cloneValues(q url.Values) url.Values {
	out := make(url.Values, len(q))
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}
