package podworker

import (
	"bytes"
	"io"
	"os"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// The kubelet's limits on termination messages.
const (
	maxTerminationMessage = 4096
	fallbackLogLines      = 80
	fallbackLogBytes      = 2048
)

// readTerminationMessage returns what the container wrote to its
// terminationMessagePath, or with FallbackToLogsOnError and a failed,
// silent container, the tail of its log.
func readTerminationMessage(c *v1.Container, cs *runtime.ContainerStatus) string {
	for _, m := range cs.Mounts {
		if m.ContainerPath != cs.TerminationMessagePath || cs.TerminationMessagePath == "" {
			continue
		}
		if msg := readCapped(m.HostPath, maxTerminationMessage); msg != "" {
			return msg
		}
	}
	if cs.TerminationMessagePolicy == string(v1.TerminationMessageFallbackToLogsOnError) && cs.ExitCode != 0 && cs.LogPath != "" {
		return logTail(cs.LogPath, fallbackLogLines, fallbackLogBytes)
	}
	return ""
}

func readCapped(path string, max int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, max))
	return string(b)
}

// logTail is the kubelet's fallback message: the last lines entries of a
// CRI-format log ("<time> <stream> <P|F> <text>"), counted as the file's
// lines, stdout and stderr alike; their texts concatenated (a full entry
// ends its line, a partial one runs on into the next, the last one
// included), of which the last maxBytes bytes.
func logTail(path string, lines, maxBytes int) string {
	b, err := readTail(path, int64(16*maxBytes))
	if err != nil {
		return ""
	}
	entries := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if len(entries) > lines {
		entries = entries[len(entries)-lines:]
	}
	var out []byte
	for _, line := range entries {
		fields := bytes.SplitN(line, []byte(" "), 4)
		if len(fields) < 4 {
			continue
		}
		out = append(out, fields[3]...)
		if string(fields[2]) != "P" {
			out = append(out, '\n')
		}
	}
	if len(out) > maxBytes {
		out = out[len(out)-maxBytes:]
	}
	return string(out)
}

// readTail reads at most the last n bytes of a file, so that a huge log
// costs no more than a small one.
func readTail(path string, n int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	off := max(fi.Size()-n, 0)
	b, err := io.ReadAll(io.NewSectionReader(f, off, fi.Size()-off))
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:] // drop the partial first line
		}
	}
	return b, err
}
