package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Mounted is where a volume is on the host, as containers mount it.
type Mounted struct {
	HostPath string
	ReadOnly bool // the plugin's data is never written by containers
	// Image, for an image volume, is the pulled image the runtime mounts
	// (CRI Mount.image) instead of a host path, and ImageReference the
	// reference the pod gave. SetUpPod never returns these: the pod
	// worker pulls the image first, as the kubelet's image manager does.
	Image, ImageReference string
	// SELinuxRelabel asks the runtime to give the volume the container's
	// SELinux label (CRI Mount.selinux_relabel): volumes the kubelet
	// manages and relabels (Attributes Managed and SELinuxRelabel), not a
	// host path the pod names, whose labels belong to the host.
	SELinuxRelabel bool
}

// relabelPlugins are the plugins whose volumes the kubelet relabels.
// hostPath is not one; PVCs are not either, for now (a local PV would
// be, a hostPath PV not: the plugin does not tell which it set up).
var relabelPlugins = map[string]bool{
	emptyDirPluginName:    true,
	configMapPluginName:   true,
	secretPluginName:      true,
	downwardAPIPluginName: true,
	projectedPluginName:   true,
}

// readOnlyPlugins hold API data: the kubelet mounts them read-only.
var readOnlyPlugins = map[string]bool{
	"kubernetes.io/configmap":    true,
	"kubernetes.io/secret":       true,
	"kubernetes.io/downward-api": true,
	"kubernetes.io/projected":    true,
}

// Manager sets up and tears down the volumes of the node's pods.
type Manager struct {
	host    Host
	plugins []Plugin
	log     *slog.Logger
}

// NewManager returns a manager using the given plugins.
func NewManager(host Host, plugins []Plugin, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	return &Manager{host: host, plugins: plugins, log: log}
}

// SetUpError lists the volumes that could not be set up, each with the
// kubelet's FailedMount message.
type SetUpError struct {
	Failed   []string          // volume names, sorted
	Messages map[string]string // volume name -> message
}

func (e *SetUpError) Error() string {
	msgs := make([]string, 0, len(e.Failed))
	for _, name := range e.Failed {
		msgs = append(msgs, e.Messages[name])
	}
	return strings.Join(msgs, "; ")
}

// SetUpPod sets every volume of the pod up (again: data volumes are
// refreshed) and returns where each is. Volumes that fail do not stop the
// others; the error is a *SetUpError naming them.
func (m *Manager) SetUpPod(ctx context.Context, pod *v1.Pod, podIPs []string) (map[string]Mounted, error) {
	out := make(map[string]Mounted, len(pod.Spec.Volumes))
	failed := &SetUpError{Messages: map[string]string{}}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.Image != nil {
			continue // no host directory: the runtime mounts the image
		}
		mounted, err := m.setUp(ctx, pod, v, podIPs)
		if err != nil {
			failed.Failed = append(failed.Failed, v.Name)
			failed.Messages[v.Name] = fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.Name, err)
			continue
		}
		out[v.Name] = mounted
	}
	if len(failed.Failed) > 0 {
		sort.Strings(failed.Failed)
		return out, failed
	}
	return out, nil
}

func (m *Manager) setUp(ctx context.Context, pod *v1.Pod, v *v1.Volume, podIPs []string) (Mounted, error) {
	p, err := FindPlugin(m.plugins, v)
	if err != nil {
		return Mounted{}, err
	}
	dir := VolumeDir(m.host.RootDir, pod.UID, p.Name(), v.Name)
	start := time.Now()
	path, err := p.SetUp(ctx, SetUpContext{Pod: pod, Volume: v, Dir: dir, PodIPs: podIPs})
	observe(ctx, v.Name, p.Name(), start, err)
	if err != nil {
		return Mounted{}, err
	}
	return Mounted{HostPath: path, ReadOnly: readOnlyPlugins[p.Name()] || ClaimReadOnly(v), SELinuxRelabel: relabelPlugins[p.Name()]}, nil
}

// TearDownPod tears down every volume found in the pod's volume
// directory (what was set up, whatever the pod's spec says now) and
// removes the directory. Unknown plugin directories are unmounted if
// needed and removed.
func (m *Manager) TearDownPod(uid types.UID) error {
	root := PodVolumesDir(m.host.RootDir, uid)
	pluginDirs, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read pod volumes: %w", err)
	}
	var errs []error
	for _, pd := range pluginDirs {
		vols, err := os.ReadDir(filepath.Join(root, pd.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := m.pluginByDir(pd.Name())
		for _, vd := range vols {
			dir := filepath.Join(root, pd.Name(), vd.Name())
			if err := m.tearDown(p, dir); err != nil {
				errs = append(errs, fmt.Errorf("UnmountVolume.TearDown failed for volume %q: %w", vd.Name(), err))
			}
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(root); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m *Manager) tearDown(p Plugin, dir string) error {
	if p != nil {
		return p.TearDown(dir)
	}
	if m.host.Mounter != nil {
		if mp, _ := m.host.Mounter.IsMountPoint(dir); mp {
			if err := m.host.Mounter.Unmount(dir); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(dir)
}

func (m *Manager) pluginByDir(escaped string) Plugin {
	for _, p := range m.plugins {
		if EscapePluginName(p.Name()) == escaped {
			return p
		}
	}
	return nil
}

// CleanupOrphans tears down the volumes of pods not in keep (deleted
// while the agent was down, or whose teardown failed before).
func (m *Manager) CleanupOrphans(keep map[types.UID]bool) error {
	pods, err := os.ReadDir(filepath.Join(m.host.RootDir, "pods"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range pods {
		uid := types.UID(d.Name())
		if keep[uid] {
			continue
		}
		if _, err := os.Stat(PodVolumesDir(m.host.RootDir, uid)); err != nil {
			continue
		}
		m.log.Info("removing volumes of a pod that no longer exists", "podUID", uid)
		if err := m.TearDownPod(uid); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
