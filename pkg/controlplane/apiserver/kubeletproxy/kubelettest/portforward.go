package kubelettest

import (
	"io"
	"net/http"

	v1 "k8s.io/api/core/v1"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
)

// portForwardProtocol is the kubelet's SPDY port-forward protocol.
const portForwardProtocol = "portforward.k8s.io"

// servePortForward echoes every forwarded connection: what the client
// sends on a data stream comes back on it. The kubelet protocol pairs a
// data stream with an error stream per connection (headers port and
// requestID); the error streams stay silent.
func servePortForward(w http.ResponseWriter, r *http.Request) {
	if _, err := httpstream.Handshake(r, w, []string{portForwardProtocol}); err != nil {
		return // Handshake has answered
	}
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		go func() {
			<-replySent
			if st.Headers().Get(v1.StreamType) != v1.StreamTypeData {
				return
			}
			_, _ = io.Copy(st, st)
			_ = st.Close()
		}()
		return nil
	})
	if conn == nil {
		return
	}
	<-conn.CloseChan()
}
