package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/userns"
)

// newUserNamespaces builds the allocator of hostUsers: false pods' user
// namespaces, as the kubelet makes its user namespace manager at start:
// the node's range and the blocks recorded in the pod directories must
// check out, or the agent does not start.
func newUserNamespaces(cfg *agentconfig.Config, rootDir string, log *slog.Logger) (*userns.Manager, error) {
	ids := uint32(cfg.IDsPerPod()) // validated: a multiple of 65536 below 2^32
	first, length, err := userns.KubeletMappings(userns.HostIDs(), ids)
	if err != nil {
		return nil, fmt.Errorf("create user namespace manager: kubelet mappings: %w", err)
	}
	m, err := userns.New(userns.Config{
		PodsDir: filepath.Join(rootDir, "pods"), IDsPerPod: ids,
		FirstID: first, Length: length, MaxPods: int(cfg.MaxPods),
		Logger: log.With("component", "userns"),
	})
	if err != nil {
		return nil, fmt.Errorf("create user namespace manager: %w", err)
	}
	return m, nil
}
