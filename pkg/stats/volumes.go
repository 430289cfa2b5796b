package stats

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// metricsPlugins are the volume plugins whose volumes have usage stats
// in the kubelet's summary (their MetricsProvider is MetricsDu on the
// volume's directory), under the directory names the plugins set up
// (<root>/pods/<uid>/volumes/<escaped plugin name>/<volume name>). A
// hostPath has no metrics (MetricsNil) and is left out, as upstream; a
// persistent volume's stats (pvcRef) are not reported by this agent.
var metricsPlugins = []struct {
	dir string
	// localEphemeral is the volume util's IsLocalEphemeralVolume: the
	// volume counts in the pod's ephemeral storage (configMap, emptyDir
	// of the default medium; secrets, projected and downward API volumes
	// are in memory).
	localEphemeral func(dir string) bool
}{
	{volume.EscapePluginName("kubernetes.io/configmap"), func(string) bool { return true }},
	{volume.EscapePluginName("kubernetes.io/downward-api"), func(string) bool { return false }},
	{volume.EscapePluginName("kubernetes.io/empty-dir"), onParentFs},
	{volume.EscapePluginName("kubernetes.io/projected"), func(string) bool { return false }},
	{volume.EscapePluginName("kubernetes.io/secret"), func(string) bool { return false }},
}

// onParentFs: an emptyDir on the node's disk is a plain directory; one of
// medium Memory is a tmpfs mounted on it (another device than its parent).
func onParentFs(dir string) bool {
	var st, parent syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil || syscall.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev == parent.Dev
}

// podVolumes is the summary's `volume` list of a pod (every volume with
// metrics, by name) and the local ephemeral ones among them.
func (b *podBuilder) podVolumes(uid types.UID, at time.Time) (all, ephemeral []VolumeStats) {
	root := b.p.cfg.RootDir
	if root == "" || b.p.cfg.NoVolumeStats {
		return nil, nil
	}
	base := volume.PodVolumesDir(root, uid)
	for _, pl := range metricsPlugins {
		entries, err := os.ReadDir(filepath.Join(base, pl.dir))
		if err != nil {
			continue // no volume of this type
		}
		for _, e := range entries {
			if !e.IsDir() {
				continue
			}
			dir := filepath.Join(base, pl.dir, e.Name())
			fs, ok := b.volumeUsage(dir, at)
			if !ok {
				continue
			}
			vs := VolumeStats{Name: e.Name(), FsStats: *fs}
			all = append(all, vs)
			if pl.localEphemeral(dir) {
				ephemeral = append(ephemeral, vs)
			}
		}
	}
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all, ephemeral
}

// usage is MetricsDu on path with the size of the filesystem fsPath is
// on; false when path cannot be measured (gone, or not yet made).
func (b *podBuilder) usage(path, fsPath string, at time.Time) (*FsStats, bool) {
	bytes, inodes, err := diskUsage(path)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.p.log.Debug("disk usage", "path", path, "err", err)
		}
		return nil, false
	}
	fs := &FsStats{Time: metav1.NewTime(at)}
	if whole := b.statfs(fsPath, at); whole != nil {
		fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
	}
	fs.UsedBytes, fs.InodesUsed = ptr(bytes), ptr(inodes)
	return fs, true
}

// volumeUsage is usage for a volume directory, through the provider's
// cache of volumeStatsAggPeriod: the figures and their time are those of
// the last measurement.
func (b *podBuilder) volumeUsage(dir string, at time.Time) (*FsStats, bool) {
	e, err := b.p.volumes.usage(dir, at, diskUsage)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			b.p.log.Debug("disk usage", "path", dir, "err", err)
		}
		return nil, false
	}
	fs := &FsStats{Time: metav1.NewTime(e.at)}
	if whole := b.statfs(dir, at); whole != nil {
		fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
	}
	fs.UsedBytes, fs.InodesUsed = ptr(e.bytes), ptr(e.inodes)
	return fs, true
}

// statfs is the filesystem holding path, looked up once per summary.
func (b *podBuilder) statfs(path string, at time.Time) *FsStats {
	if whole, seen := b.fs[path]; seen {
		return whole
	}
	whole, err := statfs(path, at)
	if err != nil {
		b.p.log.Debug("filesystem", "path", path, "err", err)
	}
	b.fs[path] = whole
	return whole
}

// containerLogs is the usage of a container's log directory
// (<podLogsDir>/<namespace>_<name>_<uid>/<container>), on the node's
// filesystem, as the kubelet's CRI stats provider measures it.
func (b *podBuilder) containerLogs(ref PodReference, container string, at time.Time) *FsStats {
	if b.p.cfg.PodLogsDir == "" {
		return nil
	}
	dir := filepath.Join(runtime.PodLogsDir(b.p.cfg.PodLogsDir, ref.Namespace, ref.Name, types.UID(ref.UID)), container)
	fs, _ := b.usage(dir, b.nodeFsPath(), at)
	return fs
}

func (b *podBuilder) nodeFsPath() string {
	if b.p.cfg.RootDir != "" {
		return b.p.cfg.RootDir
	}
	return b.p.cfg.PodLogsDir
}

// podEphemeralStorage is the kubelet's calcEphemeralStorage: the
// containers' writable layers and logs, the local ephemeral volumes, the
// files directly in the pod's log directory and its etc-hosts file,
// against the node's filesystem.
func (b *podBuilder) podEphemeralStorage(ps *PodStats, ephemeral []VolumeStats, at time.Time) *FsStats {
	out := &FsStats{Time: metav1.NewTime(at)}
	if whole := b.statfs(b.nodeFsPath(), at); whole != nil {
		out.CapacityBytes, out.AvailableBytes, out.Inodes, out.InodesFree = whole.CapacityBytes, whole.AvailableBytes, whole.Inodes, whole.InodesFree
	}
	add := func(fs *FsStats, inodes bool) {
		if fs == nil {
			return
		}
		out.UsedBytes = addUsage(out.UsedBytes, fs.UsedBytes)
		if inodes {
			out.InodesUsed = addUsage(out.InodesUsed, fs.InodesUsed)
		}
	}
	for _, c := range ps.Containers {
		if c.Rootfs == nil {
			continue // as upstream: a container's logs count with its rootfs
		}
		add(c.Rootfs, true)
		add(c.Logs, true)
	}
	for i := range ephemeral {
		add(&ephemeral[i].FsStats, true)
	}
	if dir := b.p.cfg.PodLogsDir; dir != "" {
		podLogs := runtime.PodLogsDir(dir, ps.PodRef.Namespace, ps.PodRef.Name, types.UID(ps.PodRef.UID))
		entries, _ := os.ReadDir(podLogs)
		for _, e := range entries {
			if !e.IsDir() {
				fs, _ := b.usage(filepath.Join(podLogs, e.Name()), b.nodeFsPath(), at)
				add(fs, true)
			}
		}
	}
	if root := b.p.cfg.RootDir; root != "" {
		fs, _ := b.usage(filepath.Join(root, "pods", ps.PodRef.UID, "etc-hosts"), root, at)
		add(fs, true)
	}
	return out
}

// addUsage is upstream's: nil plus nil stays nil.
func addUsage(a, b *uint64) *uint64 {
	switch {
	case b == nil:
		return a
	case a == nil:
		return ptr(*b)
	}
	return ptr(*a + *b)
}
