package probe

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// maxOutput bounds the output a probe keeps, as upstream's 10 KiB.
const maxOutput = 10 << 10

// Execer runs a command in a container (the CRI's ExecSync).
type Execer interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtime.ExecResult, error)
}

// Exec runs cmd in the container: exit code 0 succeeds, any other fails
// with the command's output; a timeout fails (upstream's ExecProbeTimeout,
// on since 1.20); a runtime error is Unknown.
func Exec(ctx context.Context, ex Execer, containerID string, cmd []string, timeout time.Duration) (Outcome, string, error) {
	res, err := ex.ExecSync(ctx, containerID, cmd, timeout)
	if err != nil {
		if isTimeout(err) {
			return OutcomeFailure, fmt.Sprintf("command %q timed out", strings.Join(cmd, " ")), nil
		}
		return OutcomeUnknown, "", err
	}
	out := truncate(string(res.Stdout) + string(res.Stderr))
	if res.ExitCode != 0 {
		return OutcomeFailure, out, nil
	}
	return OutcomeSuccess, out, nil
}

// isTimeout: the runtime (or the call's own deadline) reported that the
// command ran out of time.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	// status.Code finds the status however deeply it is wrapped (the
	// runtime client wraps it once; a bare status error is not wrapped).
	if status.Code(err) == codes.DeadlineExceeded {
		return true
	}
	// containerd 1.6 wraps the timeout as "timeout Ns exceeded: context deadline exceeded".
	return strings.Contains(err.Error(), "deadline exceeded")
}

func truncate(s string) string {
	if len(s) > maxOutput {
		return s[:maxOutput]
	}
	return s
}
