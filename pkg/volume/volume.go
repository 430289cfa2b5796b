package volume

import (
	"context"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Getter reads the API objects data volumes are made of. The agent passes
// its API client; standalone agents pass nil (those volume types then fail
// with a clear error).
type Getter interface {
	GetConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	GetSecret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// CreateToken requests a service account token (TokenRequest) bound to
	// the pod.
	CreateToken(ctx context.Context, namespace, serviceAccount string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
	GetPersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
}

// Host is what plugins know of the node.
type Host struct {
	// RootDir is the agent's root; pod volumes live below
	// <RootDir>/pods/<uid>/volumes.
	RootDir  string
	NodeName string
	Getter   Getter // nil: standalone
	// Mounter mounts and unmounts (tmpfs for memory emptyDirs and
	// secrets); the default uses mount(2).
	Mounter Mounter
	// Allocatable is the node's allocatable resources: a downwardAPI
	// resourceFieldRef to an unset limit reads it (as the kubelet's
	// does), and memory-backed volumes are capped by its memory.
	Allocatable v1.ResourceList
}

// Mounter is the mount(2) surface plugins use, faked in unit tests.
type Mounter interface {
	MountTmpfs(dir string, sizeBytes int64) error
	Unmount(dir string) error
	IsMountPoint(dir string) (bool, error)
}

// SetUpContext is what a plugin gets to set one volume up.
type SetUpContext struct {
	Pod    *v1.Pod
	Volume *v1.Volume
	// Dir is the volume's directory (<pod dir>/volumes/<plugin>/<name>);
	// hostPath and local PVs do not use it: their Path is elsewhere.
	Dir string
	// PodIP is filled once the sandbox exists (downwardAPI status.podIP).
	PodIPs []string
}

// Plugin is one volume type.
type Plugin interface {
	// Name is upstream's plugin name, e.g. "kubernetes.io/empty-dir".
	Name() string
	// CanSupport tells whether the volume is of this type.
	CanSupport(v *v1.Volume) bool
	// SetUp makes the volume ready (idempotent: called again on every sync
	// to refresh data volumes) and returns the host path containers mount.
	SetUp(ctx context.Context, c SetUpContext) (hostPath string, err error)
	// TearDown removes what SetUp made in dir (unmounting tmpfs first).
	TearDown(dir string) error
}

// EscapePluginName is upstream's directory form of a plugin name:
// "kubernetes.io/empty-dir" -> "kubernetes.io~empty-dir".
func EscapePluginName(name string) string { return strings.ReplaceAll(name, "/", "~") }

// PodVolumesDir is <root>/pods/<uid>/volumes.
func PodVolumesDir(root string, uid types.UID) string {
	return filepath.Join(root, "pods", string(uid), "volumes")
}

// VolumeDir is <root>/pods/<uid>/volumes/<escaped plugin>/<volume name>.
func VolumeDir(root string, uid types.UID, plugin, volume string) string {
	return filepath.Join(PodVolumesDir(root, uid), EscapePluginName(plugin), volume)
}
