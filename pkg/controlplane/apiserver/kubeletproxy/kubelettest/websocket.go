package kubelettest

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rcconst "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
)

// serveWebSocketExec answers a WebSocket exec with remote command
// protocol v4.channel.k8s.io, as the kubelet's streaming server does
// (it has no v5, which the API server translates to SPDY). Commands:
//
//	line           reads one line from stdin and writes it to stdout
//	anything else  writes the command line to stdout
func serveWebSocketExec(w http.ResponseWriter, r *http.Request) {
	channels := []wsstream.ChannelType{wsstream.ReadChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.WriteChannel, wsstream.ReadChannel}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		rcconst.StreamProtocolV4Name: {Binary: true, Channels: channels},
	})
	_, streams, err := conn.Open(w, r)
	if err != nil {
		return // the WebSocket server has answered
	}
	defer conn.Close()
	stdout := streams[rcconst.StreamStdOut]
	cmd := r.URL.Query()["command"]
	if len(cmd) == 1 && cmd[0] == "line" {
		line, _ := bufio.NewReader(streams[rcconst.StreamStdIn]).ReadString('\n')
		_, _ = io.WriteString(stdout, line)
	} else {
		_, _ = io.WriteString(stdout, strings.Join(cmd, " ")+"\n")
	}
	data, _ := json.Marshal(metav1.Status{Status: metav1.StatusSuccess})
	_, _ = streams[rcconst.StreamErr].Write(data)
}
