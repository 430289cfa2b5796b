package kubelettest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
	"k8s.io/streaming/pkg/httpstream/spdy"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// streamTimeout bounds waiting for the client's streams.
const streamTimeout = 10 * time.Second

// session is one remote command's streams, by stream type.
type session struct {
	conn    httpstream.Connection
	streams map[string]httpstream.Stream
}

// serveExec runs the fake commands:
//
//	cat            copies stdin to stdout
//	big <n>        writes n bytes to stdout (see Pattern)
//	size           writes the first terminal size the client sends ("80x24")
//	fail <code>    writes "failing" to stderr and exits with code
//	anything else  writes the command line to stdout
func serveExec(w http.ResponseWriter, r *http.Request) {
	if wsstream.IsWebSocketRequest(r) {
		serveWebSocketExec(w, r)
		return
	}
	s, err := openSession(w, r)
	if err != nil {
		return
	}
	defer s.conn.Close()
	cmd := r.URL.Query()["command"]
	switch {
	case len(cmd) == 1 && cmd[0] == "cat":
		s.cat()
		s.finish(nil)
	case len(cmd) == 2 && cmd[0] == "big":
		n, _ := strconv.Atoi(cmd[1])
		if out := s.streams[v1.StreamTypeStdout]; out != nil {
			_, _ = io.Copy(out, io.LimitReader(pattern{}, int64(n)))
		}
		s.finish(nil)
	case len(cmd) == 1 && cmd[0] == "size":
		s.size()
		s.finish(nil)
	case len(cmd) == 2 && cmd[0] == "fail":
		code, _ := strconv.Atoi(cmd[1])
		s.write(v1.StreamTypeStderr, "failing\n")
		s.finish(&code)
	default:
		s.write(v1.StreamTypeStdout, strings.Join(cmd, " ")+"\n")
		s.finish(nil)
	}
}

// serveAttach copies stdin to stdout, or says it attached without stdin.
func serveAttach(w http.ResponseWriter, r *http.Request) {
	s, err := openSession(w, r)
	if err != nil {
		return
	}
	defer s.conn.Close()
	if s.streams[v1.StreamTypeStdin] != nil {
		s.cat()
	} else {
		s.write(v1.StreamTypeStdout, "attached\n")
	}
	s.finish(nil)
}

// openSession upgrades to SPDY with remote command protocol v4 and waits
// for the streams the query asks for, as the kubelet does (it drops
// stderr when a tty is asked for).
func openSession(w http.ResponseWriter, r *http.Request) (*session, error) {
	q := r.URL.Query()
	want := map[string]bool{v1.StreamTypeError: true}
	want[v1.StreamTypeStdin] = q.Get(v1.ExecStdinParam) == "1"
	want[v1.StreamTypeStdout] = q.Get(v1.ExecStdoutParam) == "1"
	tty := q.Get(v1.ExecTTYParam) == "1"
	want[v1.StreamTypeStderr] = q.Get(v1.ExecStderrParam) == "1" && !tty
	want[v1.StreamTypeResize] = tty
	if _, err := httpstream.Handshake(r, w, []string{rcconst.StreamProtocolV4Name}); err != nil {
		return nil, err // Handshake has answered
	}
	streams := make(chan httpstream.Stream, 8)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, _ <-chan struct{}) error {
		streams <- st
		return nil
	})
	if conn == nil {
		return nil, fmt.Errorf("SPDY upgrade failed")
	}
	s := &session{conn: conn, streams: map[string]httpstream.Stream{}}
	timeout := time.After(streamTimeout)
	for len(s.streams) < count(want) {
		select {
		case st := <-streams:
			s.streams[st.Headers().Get(v1.StreamType)] = st
		case <-timeout:
			conn.Close()
			return nil, fmt.Errorf("timed out waiting for the client's streams")
		}
	}
	return s, nil
}

func count(want map[string]bool) int {
	n := 0
	for _, on := range want {
		if on {
			n++
		}
	}
	return n
}

// cat copies stdin to stdout until the client closes stdin.
func (s *session) cat() {
	in, out := s.streams[v1.StreamTypeStdin], s.streams[v1.StreamTypeStdout]
	if in == nil || out == nil {
		return
	}
	_, _ = io.Copy(out, in)
}

// size reports the first resize event (a JSON TerminalSize).
func (s *session) size() {
	st := s.streams[v1.StreamTypeResize]
	if st == nil {
		return
	}
	var size struct{ Width, Height uint16 }
	if err := json.NewDecoder(st).Decode(&size); err == nil {
		s.write(v1.StreamTypeStdout, fmt.Sprintf("%dx%d\n", size.Width, size.Height))
	}
}

func (s *session) write(streamType, text string) {
	if st := s.streams[streamType]; st != nil {
		_, _ = io.WriteString(st, text)
	}
}

// finish reports success, or the exit code, on the error stream (v4's
// JSON Status) and closes the streams so that the client's copies end.
func (s *session) finish(exitCode *int) {
	status := metav1.Status{Status: metav1.StatusSuccess}
	if exitCode != nil {
		status = metav1.Status{
			Status:  metav1.StatusFailure,
			Reason:  rcconst.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: exit status %d", *exitCode),
			Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: rcconst.ExitCodeCauseType, Message: strconv.Itoa(*exitCode)}}},
		}
	}
	for _, t := range []string{v1.StreamTypeStdout, v1.StreamTypeStderr} {
		if st := s.streams[t]; st != nil {
			_ = st.Close()
		}
	}
	data, _ := json.Marshal(status)
	errStream := s.streams[v1.StreamTypeError]
	_, _ = errStream.Write(data)
	_ = errStream.Close()
	// Let the client hang up first, so that nothing it still sends
	// resets the connection before it has read everything.
	select {
	case <-s.conn.CloseChan():
	case <-time.After(streamTimeout):
	}
}

// pattern reads as an endless "0123456789abcdef" repetition.
type pattern struct{}

func (pattern) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = "0123456789abcdef"[i%16]
	}
	return len(p), nil
}

// Pattern returns the first n bytes the "big" command writes.
func Pattern(n int) []byte {
	b := make([]byte, n)
	_, _ = pattern{}.Read(b)
	return b
}
