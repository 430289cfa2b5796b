package kubeletproxy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
	clientspdy "k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// spdyPingPeriod keeps the SPDY connection to the kubelet alive through
// idle periods (upstream's translator pings every 5 seconds).
const spdyPingPeriod = 5 * time.Second

// translateStream serves a WebSocket exec or attach (v5.channel.k8s.io,
// what kubectl tries first) by running it against the kubelet over SPDY,
// as upstream's StreamTranslatorHandler does: kubelets and container
// runtimes may not speak WebSocket v5. Once the WebSocket is open, every
// outcome reaches the client on the error channel as a Status.
func translateStream(w http.ResponseWriter, r *http.Request, loc *url.URL, transport *http.Transport, opts streamOptions) {
	ws, err := openWebSocketStreams(w, r, opts)
	if err != nil {
		return // the WebSocket server has answered the client
	}
	defer ws.close()
	executor, err := newSPDYExecutor(loc, transport)
	if err != nil {
		ws.finish(r.Context(), apierrors.NewInternalError(err))
		return
	}
	// A client that hangs up ends the SPDY session too.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() {
		select {
		case <-ws.clientGone:
			cancel()
		case <-ctx.Done():
		}
	}()
	err = executor.StreamWithContext(ctx, ws.streamOptions(opts))
	ws.finish(r.Context(), translatedStatus(err))
}

// newSPDYExecutor runs remote commands on the kubelet at loc over SPDY,
// refusing redirects as upstream does.
func newSPDYExecutor(loc *url.URL, transport *http.Transport) (remotecommand.Executor, error) {
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{UpgradeTransport: transport, PingPeriod: spdyPingPeriod})
	if err != nil {
		return nil, fmt.Errorf("SPDY round tripper: %w", err)
	}
	return remotecommand.NewSPDYExecutorRejectRedirects(rt, clientspdy.NewUpgraderForStreaming(rt), http.MethodPost, loc)
}

// translatedStatus is the Status reported to the WebSocket client for the
// SPDY session's outcome.
func translatedStatus(err error) *apierrors.StatusError {
	var statusErr *apierrors.StatusError
	var exitErr exec.CodeExitError
	switch {
	case err == nil:
		return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusSuccess}}
	case errors.As(err, &statusErr):
		return statusErr
	case errors.As(err, &exitErr) && exitErr.Exited():
		return exitStatus(exitErr)
	}
	return apierrors.NewInternalError(err)
}

// exitStatus reports a command's non-zero exit code the way the kubelet
// does, so that kubectl exits with the same code.
func exitStatus(exitErr exec.CodeExitError) *apierrors.StatusError {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Reason:  rcconst.NonZeroExitCodeReason,
		Message: fmt.Sprintf("command terminated with non-zero exit code: %v", exitErr),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{
			{Type: rcconst.ExitCodeCauseType, Message: fmt.Sprintf("%d", exitErr.ExitStatus())},
		}},
	}}
}
