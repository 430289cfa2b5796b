package kubeletproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// podLog streams a container's log from the node's kubelet, as upstream's
// LogREST and LocationStreamer do.
func (h *connectRequest) podLog(w http.ResponseWriter, r *http.Request) error {
	if err := h.allowMethods(r, http.MethodGet, http.MethodHead); err != nil {
		return err
	}
	opts, err := podLogOptions(r.URL.Query())
	if err != nil {
		return err
	}
	if errs := validatePodLogOptions(opts); len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "PodLogOptions"}, h.ri.Name, errs)
	}
	pod, err := h.Pods.GetPod(r.Context(), h.ri.Namespace, h.ri.Name)
	if err != nil {
		return err
	}
	container, err := podContainer(pod, opts.Container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		// Upstream has no location to stream from and answers 204 with
		// no body: kubectl prints nothing.
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	ep, err := h.kubeletFor(r.Context(), pod.Spec.NodeName)
	if err != nil {
		return err
	}
	loc := ep.url(fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container), kubeletLogQuery(opts))
	transport := h.Client.transport
	if opts.InsecureSkipTLSVerifyBackend {
		transport = h.Client.insecure
	}
	body, err := fetchKubeletLog(r.Context(), loc, transport, pod.Name)
	if err != nil {
		return err
	}
	defer body.Close()
	streamLog(w, r, body, opts.Follow)
	return nil
}

// podLogOptions reads the query into PodLogOptions.
func podLogOptions(q url.Values) (*v1.PodLogOptions, error) {
	opts := &v1.PodLogOptions{
		Container:                    q.Get("container"),
		Follow:                       boolParam(q, "follow"),
		Previous:                     boolParam(q, "previous"),
		Timestamps:                   boolParam(q, "timestamps"),
		InsecureSkipTLSVerifyBackend: boolParam(q, "insecureSkipTLSVerifyBackend"),
	}
	var err error
	if opts.SinceSeconds, err = int64Param(q, "sinceSeconds"); err != nil {
		return nil, err
	}
	if opts.TailLines, err = int64Param(q, "tailLines"); err != nil {
		return nil, err
	}
	if opts.LimitBytes, err = int64Param(q, "limitBytes"); err != nil {
		return nil, err
	}
	if s := q.Get("sinceTime"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		opts.SinceTime = &metav1.Time{Time: t}
	}
	if s := q.Get("stream"); s != "" {
		opts.Stream = &s
	}
	return opts, nil
}

// validatePodLogOptions is upstream's ValidatePodLogOptions.
func validatePodLogOptions(o *v1.PodLogOptions) field.ErrorList {
	var errs field.ErrorList
	if o.TailLines != nil && *o.TailLines < 0 {
		errs = append(errs, field.Invalid(field.NewPath("tailLines"), *o.TailLines, "must be greater than or equal to 0"))
	}
	if o.LimitBytes != nil && *o.LimitBytes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("limitBytes"), *o.LimitBytes, "must be greater than 0"))
	}
	switch {
	case o.SinceSeconds != nil && o.SinceTime != nil:
		errs = append(errs, field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified"))
	case o.SinceSeconds != nil && *o.SinceSeconds < 1:
		errs = append(errs, field.Invalid(field.NewPath("sinceSeconds"), *o.SinceSeconds, "must be greater than 0"))
	}
	if o.Stream != nil {
		switch *o.Stream {
		case v1.LogStreamStdout, v1.LogStreamStderr:
			if o.TailLines != nil {
				errs = append(errs, field.Forbidden(field.NewPath(""), "`tailLines` and specific `stream` are mutually exclusive for now"))
			}
		case v1.LogStreamAll:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("stream"), *o.Stream, []string{v1.LogStreamAll, v1.LogStreamStderr, v1.LogStreamStdout}))
		}
	}
	return errs
}

// kubeletLogQuery is the kubelet's /containerLogs query for the options.
func kubeletLogQuery(o *v1.PodLogOptions) url.Values {
	q := url.Values{}
	if o.Follow {
		q.Set("follow", "true")
	}
	if o.Previous {
		q.Set("previous", "true")
	}
	if o.Timestamps {
		q.Set("timestamps", "true")
	}
	if o.SinceSeconds != nil {
		q.Set("sinceSeconds", strconv.FormatInt(*o.SinceSeconds, 10))
	}
	if o.SinceTime != nil {
		q.Set("sinceTime", o.SinceTime.Format(time.RFC3339))
	}
	if o.TailLines != nil {
		q.Set("tailLines", strconv.FormatInt(*o.TailLines, 10))
	}
	if o.LimitBytes != nil {
		q.Set("limitBytes", strconv.FormatInt(*o.LimitBytes, 10))
	}
	if o.Stream != nil {
		q.Set("stream", *o.Stream)
	}
	return q
}

// errRedirect refuses a kubelet's redirect, as upstream's PreventRedirects.
var errRedirect = errors.New("redirects forbidden")

// fetchKubeletLog GETs the log; its context is the client's request, so
// that a follow ends when the client goes away.
func fetchKubeletLog(ctx context.Context, loc *url.URL, transport http.RoundTripper, podName string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, loc.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("failed to construct request for %s: %w", loc, err)
	}
	client := &http.Client{Transport: transport, CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect }}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if err := checkKubeletResponse(resp, podName); err != nil {
		return nil, err
	}
	return resp.Body, nil
}

// maxErrorBody bounds how much of a kubelet's error answer is read.
const maxErrorBody = 50000

// checkKubeletResponse turns a kubelet's error answer into the API error
// upstream's GenericHttpResponseChecker makes of it: the kubelet's text
// becomes the message (`container "c" in pod "p" is waiting to start:
// ContainerCreating` is a 400 from the kubelet).
func checkKubeletResponse(resp *http.Response, podName string) error {
	if resp.StatusCode >= http.StatusOK && resp.StatusCode <= http.StatusPartialContent {
		return nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	text := string(data)
	switch resp.StatusCode {
	case http.StatusInternalServerError:
		return apierrors.NewInternalError(errors.New(text))
	case http.StatusBadRequest:
		return apierrors.NewBadRequest(text)
	}
	return apierrors.NewGenericServerResponse(resp.StatusCode, "", v1.Resource("pods/log"), podName, text, 0, false)
}

// streamLog copies the log to the client: plain text, flushed as it comes
// when following; a WebSocket client gets it through upstream's reader
// protocols (binary.k8s.io, base64.binary.k8s.io).
func streamLog(w http.ResponseWriter, r *http.Request, body io.Reader, follow bool) {
	if wsstream.IsWebSocketRequest(r) {
		_ = wsstream.NewReader(body, true, wsstream.NewDefaultReaderProtocols()).Copy(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	var dst io.Writer = w
	if follow {
		dst = flushWriter{w: w, rc: rc}
	}
	_, _ = io.Copy(dst, body)
}

// flushWriter flushes after every write, so that followed lines reach the
// client at once.
type flushWriter struct {
	w  io.Writer
	rc *http.ResponseController
}

func (f flushWriter) Write(p []byte) (int, error) {
	n, err := f.w.Write(p)
	if n > 0 {
		_ = f.rc.Flush()
	}
	return n, err
}
