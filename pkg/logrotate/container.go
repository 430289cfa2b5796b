package logrotate

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// check rotates one container's log if it is due; failures are logged and
// retried at the next period, as the kubelet does.
func (m *Manager) check(ctx context.Context, id string) {
	err := m.rotateIfDue(ctx, id)
	switch {
	case err == nil:
	case runtime.IsNotFound(err):
		// Removed since it was listed: nothing to rotate.
		m.log.Debug("container gone before its log was checked", "containerID", id)
	default:
		m.log.Error("rotate container log", "containerID", id, "err", err)
	}
}

// rotateIfDue rotates the container's log once it reaches MaxSize.
func (m *Manager) rotateIfDue(ctx context.Context, id string) error {
	path, err := m.logPath(ctx, id)
	if err != nil || path == "" {
		return err // "": the runtime keeps no log for this container
	}
	size, err := m.logSize(ctx, id, path)
	if err != nil {
		return err
	}
	if size < m.cfg.MaxSize {
		return nil
	}
	m.log.Debug("rotating container log", "containerID", id, "path", path, "size", size)
	if err := m.rotate(ctx, id, path); err != nil {
		return fmt.Errorf("rotate %s (%d bytes): %w", path, size, err)
	}
	return nil
}

// logPath asks the runtime where the container's log is: the path is
// absolute in CRI status, unlike the relative one in the container config.
func (m *Manager) logPath(ctx context.Context, id string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
	defer cancel()
	resp, err := m.cfg.Runtime.ContainerStatus(ctx, id, false)
	if err != nil {
		return "", fmt.Errorf("container %s status: %w", id, err)
	}
	if resp.GetStatus() == nil {
		return "", fmt.Errorf("container %s status: runtime returned none", id)
	}
	return resp.GetStatus().GetLogPath(), nil
}

// logSize stats the current log. A missing file means an earlier rotation
// renamed it and stopped before the runtime reopened it (say, the agent
// restarted): ask the runtime to reopen it now.
func (m *Manager) logSize(ctx context.Context, id, path string) (int64, error) {
	info, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := m.reopen(ctx, id); err != nil {
			return 0, fmt.Errorf("log %s missing: %w", path, err)
		}
		info, err = os.Stat(path)
	}
	if err != nil {
		return 0, fmt.Errorf("stat container log: %w", err)
	}
	return info.Size(), nil
}

func (m *Manager) reopen(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.CallTimeout)
	defer cancel()
	if err := m.cfg.Runtime.ReopenContainerLog(ctx, id); err != nil {
		return fmt.Errorf("reopen log of container %s: %w", id, err)
	}
	return nil
}
