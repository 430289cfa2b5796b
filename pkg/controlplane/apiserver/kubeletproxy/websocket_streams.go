package kubeletproxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/tools/remotecommand"
)

const (
	// wsIdleTimeout ends a WebSocket session without traffic, as the
	// kubelet's streaming server does (4 hours).
	wsIdleTimeout = 4 * time.Hour
	// wsBufferSize matches client-go's frames (32 KiB of data).
	wsBufferSize = 32 * 1024
)

// wsFinishTimeout bounds how long a finished session waits for the client
// to hang up after the close frame: long enough for a slow reader to drain
// what the socket buffers still hold (upstream waits as long).
var wsFinishTimeout = 15 * time.Minute

// wsStreams is the server side of a v5.channel.k8s.io session: channel 0
// stdin, 1 stdout, 2 stderr, 3 the error (status) channel, 4 resize, and
// 255 the client's "close channel N" signal. Frames are binary messages
// whose first byte is the channel.
type wsStreams struct {
	conn    *gwebsocket.Conn
	writeMu sync.Mutex
	// stdin and resize are fed by the read loop; nil when not asked for.
	stdin, resize *io.PipeReader
	inputs        [5]*io.PipeWriter
	// clientGone is closed when the client's side of the connection ends.
	clientGone chan struct{}
	sizes      chan remotecommand.TerminalSize
}

// openWebSocketStreams answers the WebSocket handshake (the upgrader
// answers a failed one) and starts reading the client's frames.
func openWebSocketStreams(w http.ResponseWriter, r *http.Request, opts streamOptions) (*wsStreams, error) {
	upgrader := gwebsocket.Upgrader{
		Subprotocols:    []string{rcconst.StreamProtocolV5Name},
		ReadBufferSize:  wsBufferSize + 1,
		WriteBufferSize: wsBufferSize + 1,
		CheckOrigin:     func(*http.Request) bool { return true }, // the request is authenticated
	}
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, fmt.Errorf("open WebSocket: %w", err)
	}
	ws := &wsStreams{conn: conn, clientGone: make(chan struct{})}
	if opts.stdin {
		ws.stdin, ws.inputs[rcconst.StreamStdIn] = io.Pipe()
	}
	if opts.tty {
		ws.resize, ws.inputs[rcconst.StreamResize] = io.Pipe()
		ws.sizes = make(chan remotecommand.TerminalSize)
		go readResizes(r.Context(), ws.resize, ws.sizes)
	}
	go ws.readLoop()
	// An empty message on the lowest writable channel tells the client
	// that the session is established.
	first := byte(rcconst.StreamErr)
	switch {
	case opts.stdout:
		first = rcconst.StreamStdOut
	case opts.stderr:
		first = rcconst.StreamStdErr
	}
	if _, err := ws.channel(first).Write(nil); err != nil {
		ws.close()
		return nil, fmt.Errorf("write to WebSocket: %w", err)
	}
	return ws, nil
}

// readLoop demultiplexes the client's frames into the input pipes until
// the client hangs up; the connection answers pings meanwhile.
func (ws *wsStreams) readLoop() {
	defer close(ws.clientGone)
	defer ws.closeInputs()
	ws.extendRead()
	ws.conn.SetPingHandler(func(data string) error {
		ws.extendRead()
		err := ws.conn.WriteControl(gwebsocket.PongMessage, []byte(data), time.Now().Add(time.Second))
		if err == gwebsocket.ErrCloseSent {
			return nil
		}
		return err
	})
	for {
		kind, data, err := ws.conn.ReadMessage()
		if err != nil {
			return
		}
		ws.extendRead()
		if kind != gwebsocket.BinaryMessage || len(data) == 0 {
			continue
		}
		ws.deliver(data[0], data[1:])
	}
}

// deliver passes one frame on; input nobody reads any more is dropped.
func (ws *wsStreams) deliver(ch byte, data []byte) {
	if ch == rcconst.StreamClose {
		if len(data) == 1 && int(data[0]) < len(ws.inputs) && ws.inputs[data[0]] != nil {
			_ = ws.inputs[data[0]].Close()
		}
		return
	}
	if int(ch) < len(ws.inputs) && ws.inputs[ch] != nil {
		_, _ = ws.inputs[ch].Write(data)
	}
}

func (ws *wsStreams) extendRead() { _ = ws.conn.SetReadDeadline(time.Now().Add(wsIdleTimeout)) }

func (ws *wsStreams) closeInputs() {
	for _, in := range ws.inputs {
		if in != nil {
			_ = in.Close()
		}
	}
}

// wsChannel writes frames of one channel.
type wsChannel struct {
	ws *wsStreams
	id byte
}

func (ws *wsStreams) channel(id byte) io.Writer { return wsChannel{ws: ws, id: id} }

func (c wsChannel) Write(p []byte) (int, error) {
	c.ws.writeMu.Lock()
	defer c.ws.writeMu.Unlock()
	_ = c.ws.conn.SetWriteDeadline(time.Now().Add(wsIdleTimeout))
	frame := make([]byte, 0, len(p)+1)
	frame = append(append(frame, c.id), p...)
	if err := c.ws.conn.WriteMessage(gwebsocket.BinaryMessage, frame); err != nil {
		return 0, err
	}
	return len(p), nil
}

// streamOptions wires the WebSocket channels to the SPDY client.
func (ws *wsStreams) streamOptions(opts streamOptions) remotecommand.StreamOptions {
	var so remotecommand.StreamOptions
	if opts.stdin {
		so.Stdin = ws.stdin
	}
	if opts.stdout {
		so.Stdout = ws.channel(rcconst.StreamStdOut)
	}
	if opts.stderr {
		so.Stderr = ws.channel(rcconst.StreamStdErr)
	}
	if opts.tty {
		so.Tty = true
		so.TerminalSizeQueue = sizeQueue(ws.sizes)
	}
	return so
}

// finish reports the session's status on the error channel and ends the
// session gracefully: input still arriving is dropped, a close frame
// follows the status, and the connection closes once the client hung up
// (it does after reading everything). Closing at once could reset the
// connection while a slow client still had output to read.
func (ws *wsStreams) finish(ctx context.Context, status *apierrors.StatusError) {
	for _, in := range []*io.PipeReader{ws.stdin, ws.resize} {
		if in != nil {
			_ = in.Close()
		}
	}
	if data, err := json.Marshal(status.Status()); err == nil {
		_, _ = ws.channel(rcconst.StreamErr).Write(data)
	}
	err := ws.conn.WriteControl(gwebsocket.CloseMessage,
		gwebsocket.FormatCloseMessage(gwebsocket.CloseNormalClosure, ""), time.Now().Add(wsFinishTimeout))
	if err != nil {
		return
	}
	timer := time.NewTimer(wsFinishTimeout)
	defer timer.Stop()
	select {
	case <-ws.clientGone:
	case <-ctx.Done():
	case <-timer.C:
	}
}

func (ws *wsStreams) close() { _ = ws.conn.Close() }

// readResizes decodes the client's terminal sizes (JSON objects on the
// resize channel) until the channel or the request ends.
func readResizes(ctx context.Context, r io.Reader, out chan<- remotecommand.TerminalSize) {
	defer close(out)
	dec := json.NewDecoder(r)
	for {
		var size remotecommand.TerminalSize
		if err := dec.Decode(&size); err != nil {
			return
		}
		select {
		case out <- size:
		case <-ctx.Done():
			return
		}
	}
}

// sizeQueue hands the resizes to the SPDY client.
type sizeQueue <-chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	size, ok := <-q
	if !ok {
		return nil
	}
	return &size
}
