package podworker

import (
	"context"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podcgroup"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// deps is what a pod's worker and its executor use, handed over when the
// worker starts, so that they depend on these narrow views and facts
// rather than on the Manager and its Config.
type deps struct {
	log     *slog.Logger
	now     func() time.Time
	node    criconfig.Node
	runtime runtime.Runtime // GetPodStatus reads through the whole interface
	images  imageInspector
	puller  imagePuller
	volumes VolumeManager // nil: pods with volumes fail to start
	objects volume.Getter // nil: standalone
	events  EventRecorder
	probes  podProbes
	hooks   hookRunner
	metrics Observer
	tracer  Tracer
	// backoff is the container restart back-off the planner reads;
	// mounts the per-pod volume set-up retry back-off.
	backoff restartBackoff
	mounts  retryBackoff

	// references registers the pods whose objects the getter keeps (nil:
	// none to tell).
	references ObjectReferences
	// services lists the services for the service environment variables
	// (nil: standalone).
	services ServiceLister
	// network is the Config's Network (nil: always ready).
	network func() error
	// cgroups creates the pod cgroups (nil: the runtime picks cgroups).
	cgroups *podcgroup.Manager

	// onStatus and onTerminated are the Config's (nil: not wanted);
	// forget tells the manager the worker ended.
	onStatus     func(pod *v1.Pod, status v1.PodStatus)
	onTerminated func(pod *v1.Pod)
	forget       func(ctx context.Context, w *worker)

	// runtimeClasses resolves runtimeClassName to the sandbox's CRI
	// handler (nil: standalone).
	runtimeClasses RuntimeClassGetter
	// otherPods are the pods admitted to the node, which a resize must
	// fit beside (nil: none).
	otherPods func() []*v1.Pod
	// features reads the runtime's announced features (CRI Status).
	features func(ctx context.Context) (RuntimeFeatures, error)
	// userns allocates hostUsers: false pods' user namespaces (nil: none).
	userns UserNamespaces

	// gcPolicy is the container GC policy each sync applies to its pod.
	gcPolicy GCPolicy

	runtimeName  string
	rootDir      string
	retryPeriod  time.Duration
	resyncPeriod time.Duration
}

// imageInspector reads an image's status (runAsNonRoot needs its user).
type imageInspector interface {
	ImageStatus(ctx context.Context, image *criv1.ImageSpec, verbose bool) (*criv1.ImageStatusResponse, error)
}

// imagePuller makes a container's image present (with the pod's pull
// secrets), and says how long its pull back-off lasts.
type imagePuller interface {
	ensure(ctx context.Context, pod *v1.Pod, c *v1.Container, sb *criv1.PodSandboxConfig, secrets []v1.Secret) (string, error)
	pullBackoff(pod *v1.Pod, c *v1.Container) time.Duration
}

// podProbes are the probe workers as a pod's worker drives and reads them.
type podProbes interface {
	ProbeResults
	AddPod(pod *v1.Pod)
	RemovePod(uid types.UID)
	StopLivenessAndStartup(uid types.UID)
	UpdatePodStatus(pod *v1.Pod, s *v1.PodStatus)
}

// hookRunner runs a postStart or preStop handler.
type hookRunner interface {
	Run(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID, podIP string, h *v1.LifecycleHandler) (string, error)
}

// restartBackoff is the planner's view plus the executor's record of a
// container's exit.
type restartBackoff interface {
	BackoffChecker
	Next(id string, eventTime time.Time)
}

// retryBackoff spaces out retries of one pod's failing step.
type retryBackoff interface {
	IsInBackOffSinceUpdate(id string, eventTime time.Time) bool
	Get(id string) time.Duration
	Next(id string, eventTime time.Time)
	Reset(id string)
}

// workerDeps is read when a worker starts: the Config is fixed once the
// manager runs, so this is what the worker used to read on each access.
func (m *Manager) workerDeps() deps {
	return deps{
		log: m.log, now: m.now, node: m.node(),
		runtime: m.cfg.Runtime, images: m.cfg.Images, puller: m.puller,
		volumes: m.cfg.Volumes, objects: m.cfg.Objects, references: m.cfg.References, services: m.cfg.Services, network: m.cfg.Network, events: m.events,
		probes: m.probes, hooks: m.hooks, metrics: m.cfg.Metrics, tracer: m.cfg.Tracer,
		backoff: m.backoff, mounts: m.mounts, cgroups: m.cgroups,
		onStatus: m.cfg.OnStatus, onTerminated: m.cfg.OnTerminated, forget: m.forget,
		runtimeClasses: m.cfg.RuntimeClasses, otherPods: m.admittedPods, features: m.features.get, userns: m.cfg.UserNamespaces, runtimeName: m.cfg.RuntimeName,
		rootDir: m.cfg.RootDir, retryPeriod: m.cfg.RetryPeriod, resyncPeriod: m.cfg.ResyncPeriod,
		gcPolicy: *m.cfg.ContainerGC,
	}
}
