package agent

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
)

// fakeCgroupV1 is a cgroup v1 mount root with the hierarchies the
// node cgroups are written to.
func fakeCgroupV1(t *testing.T) string {
	root := t.TempDir()
	for _, h := range []string{"cpu", "memory", "pids"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func readCgroup(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func TestSetUpNodeCgroups(t *testing.T) {
	root := fakeCgroupV1(t)
	cfg := agentconfig.Default()
	cfg.CgroupRoot = "/na"
	cfg.KubeReserved = map[string]string{"memory": "100Mi"}
	var ops []string
	observe := func(op string, _ time.Duration) { ops = append(ops, op) }
	if err := setUpNodeCgroups(context.Background(), cfg, "n1", root, nil, observe, slog.Default()); err != nil {
		t.Fatal(err)
	}
	// kubepods and the QoS tiers made: creates (kubelet_cgroup_manager_duration_seconds).
	if want := []string{"create", "create"}; !slices.Equal(ops, want) {
		t.Errorf("cgroup operations %v, want %v", ops, want)
	}
	ops = nil
	if err := setUpNodeCgroups(context.Background(), cfg, "n1", root, nil, observe, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if want := []string{"update", "update"}; !slices.Equal(ops, want) {
		t.Errorf("cgroup operations at the next start %v, want %v", ops, want)
	}
	want := memTotal() - 100<<20
	for file, v := range map[string]string{
		"memory/na/kubepods/memory.limit_in_bytes": strconv.FormatInt(want, 10),
		"cpu/na/kubepods/besteffort/cpu.shares":    "2",
		"cpu/na/kubepods/burstable/cpu.shares":     "2",
	} {
		if got := readCgroup(t, filepath.Join(root, file)); got != v {
			t.Errorf("%s = %q, want %q", file, got, v)
		}
	}
}

// An enforced reservation whose cgroup does not exist stops the agent with
// the kubelet's message.
func TestSetUpNodeCgroupsMissingReservedCgroup(t *testing.T) {
	cfg := agentconfig.Default()
	cfg.EnforceNodeAllocatable = []string{"pods", "kube-reserved"}
	cfg.KubeReservedCgroup = "/kube"
	err := setUpNodeCgroups(context.Background(), cfg, "n1", fakeCgroupV1(t), nil, nil, slog.Default())
	if want := `Failed to enforce Kube Reserved Cgroup Limits on "/kube": cgroup "/kube" has some missing paths`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want %q", err, want)
	}
}

// With cgroupsPerQOS off nothing is made: pods run flat under cgroupRoot.
func TestSetUpNodeCgroupsFlat(t *testing.T) {
	root := fakeCgroupV1(t)
	cfg := agentconfig.Default()
	off := false
	cfg.CgroupsPerQOS = &off
	cfg.EnforceNodeAllocatable = []string{"none"}
	if err := setUpNodeCgroups(context.Background(), cfg, "n1", root, nil, nil, slog.Default()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cpu", "kubepods")); err == nil {
		t.Error("kubepods made with cgroupsPerQOS off")
	}
}
