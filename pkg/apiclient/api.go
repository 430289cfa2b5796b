package apiclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/record"

	"golang.org/x/sync/errgroup"

	"github.com/nodeagent/nodeagent/pkg/eviction"
	"github.com/nodeagent/nodeagent/pkg/podsource"
	apisource "github.com/nodeagent/nodeagent/pkg/podsource/api"
)

// RESTConfig loads a kubeconfig file and applies the agent's client
// settings.
func RESTConfig(kubeconfig, userAgent string, l Limits) (*rest.Config, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	return ClientConfig(rc, userAgent, l), nil
}

// ClientConfig copies rc with the agent's user agent and its main
// client's limits (kubeAPIQPS, kubeAPIBurst), as the kubelet's
// buildKubeletClientConfig.
func ClientConfig(rc *rest.Config, userAgent string, l Limits) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.QPS, rc.Burst = l.QPS, l.Burst
	if userAgent != "" {
		rc.UserAgent = userAgent
	}
	return rc
}

// Limits are the agent's client limits: KubeletConfiguration's
// kubeAPIQPS and kubeAPIBurst, eventRecordQPS and eventBurst. As in the
// kubelet, 0 is client-go's default (5 QPS, burst 10).
type Limits struct {
	QPS        float32
	Burst      int
	EventQPS   float32
	EventBurst int
	// HeartbeatTimeout bounds each heartbeat request: as the kubelet's,
	// nodeStatusUpdateFrequency, at most the Lease's duration (0: none).
	HeartbeatTimeout time.Duration
}

// Clients are the agent's API clients, each with a rate limiter of its
// own, as the kubelet splits its kubeClient, eventClient and
// heartbeatClient.
type Clients struct {
	// Main is for watches, reads and the mirror pods (kubeAPIQPS).
	Main kubernetes.Interface
	// Status sends pod statuses with kubeAPIQPS and kubeAPIBurst of its
	// own, so a burst of reads never holds a status back (the kubelet's
	// status manager shares its kubeClient; this is the agent's choice).
	Status kubernetes.Interface
	// Events records events (eventRecordQPS, eventBurst).
	Events kubernetes.Interface
	// Heartbeat reports the node's status and renews its Lease, not
	// throttled, as the kubelet's heartbeat client (QPS -1).
	Heartbeat kubernetes.Interface
}

// NewClients builds Clients from rc, a ClientConfig result.
func NewClients(rc *rest.Config, l Limits) (Clients, error) {
	var c Clients
	for _, x := range []struct {
		cs    *kubernetes.Interface
		qps   float32
		burst int
	}{
		{&c.Main, l.QPS, l.Burst},
		{&c.Status, l.QPS, l.Burst},
		{&c.Events, l.EventQPS, l.EventBurst},
		{&c.Heartbeat, -1, 0},
	} {
		cfg := rest.CopyConfig(rc)
		cfg.QPS, cfg.Burst, cfg.RateLimiter = x.qps, x.burst, nil
		if x.cs == &c.Heartbeat {
			cfg.Timeout = min(l.HeartbeatTimeout, DefaultLeaseDuration)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return Clients{}, fmt.Errorf("API client: %w", err)
		}
		*x.cs = cs
	}
	return c, nil
}

// Config configures API: the node's identity and how often to report.
type Config struct {
	// Clients: Main is required; the others default to Main.
	Clients        Clients
	NodeName       string
	NodeIP         string
	RootDir        string
	Capacity       v1.ResourceList
	Runtime        Runtime
	KubeletVersion string
	// RegisterWithTaints are set on the Node when the agent creates it.
	RegisterWithTaints []v1.Taint
	// NodeLabels are added to the Node's standard labels.
	NodeLabels map[string]string
	// MaxPods is the pods capacity; Reserved is held back from allocatable.
	MaxPods  int64
	Reserved v1.ResourceList
	// EvictionThresholds' hard memory and nodefs shares are held back too.
	EvictionThresholds []eviction.Threshold
	// NodeStatusUpdateFrequency is the kubelet's setting (default 10s).
	NodeStatusUpdateFrequency time.Duration
	// NetworkCondition reports NetworkUnavailable when the agent owns the
	// pod network (nil: left alone); see NodeConfig.NetworkCondition.
	NetworkCondition func() (v1.NodeCondition, bool)
	// NetworkErr is the pod workers' network gate; see NodeConfig.NetworkErr.
	NetworkErr func() error
	// StatusWritten is StatusConfig.Written.
	StatusWritten func(pod *v1.Pod, status *v1.PodStatus)
	// Images and MaxImages are NodeConfig's (status.images).
	Images    ImageLister
	MaxImages int32
	Logger    *slog.Logger
}

// API is every API-side component of the agent, assembled.
type API struct {
	Objects  Objects
	Node     *NodeStatus
	Watch    *NodeWatch
	Services *ServiceWatch
	Runtimes *RuntimeClassWatch
	Lease    *Lease
	Source   *apisource.Source
	Status   *StatusManager
	Mirrors  *MirrorManager
	merger   *podsource.Merger
	recorder record.EventRecorder
	stopRec  func()
	log      *slog.Logger
}

// New builds the components; Run starts them.
func New(cfg Config) (*API, error) {
	if cfg.Clients.Main == nil || cfg.NodeName == "" || cfg.Runtime == nil {
		return nil, errors.New("apiclient: Clients.Main, NodeName and Runtime are required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	main := cfg.Clients.Main
	or := func(c kubernetes.Interface) kubernetes.Interface {
		if c == nil {
			return main
		}
		return c
	}
	status, events, heartbeat := or(cfg.Clients.Status), or(cfg.Clients.Events), or(cfg.Clients.Heartbeat)
	a := &API{log: cfg.Logger, Objects: Objects{Client: main}}
	var err error
	if a.Node, err = NewNodeStatus(NodeConfig{
		Client: heartbeat, NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, RootDir: cfg.RootDir,
		Capacity: cfg.Capacity, Runtime: cfg.Runtime, KubeletVersion: cfg.KubeletVersion,
		Taints: cfg.RegisterWithTaints, Labels: cfg.NodeLabels, MaxPods: cfg.MaxPods, Reserved: cfg.Reserved, EvictionThresholds: cfg.EvictionThresholds,
		UpdateFrequency: cfg.NodeStatusUpdateFrequency, NetworkCondition: cfg.NetworkCondition, NetworkErr: cfg.NetworkErr, Logger: cfg.Logger,
		Images: cfg.Images, MaxImages: cfg.MaxImages,
	}); err != nil {
		return nil, err
	}
	if a.Watch, err = NewNodeWatch(main, cfg.NodeName); err != nil {
		return nil, err
	}
	if a.Services, err = NewServiceWatch(main); err != nil {
		return nil, err
	}
	if a.Runtimes, err = NewRuntimeClassWatch(main); err != nil {
		return nil, err
	}
	if a.Lease, err = NewLease(LeaseConfig{Client: heartbeat, NodeName: cfg.NodeName, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if a.Source, err = apisource.New(apisource.Config{Client: main, NodeName: cfg.NodeName, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	if a.Status, err = NewStatusManager(StatusConfig{Client: status, Logger: cfg.Logger, Written: cfg.StatusWritten}); err != nil {
		return nil, err
	}
	if a.Mirrors, err = NewMirrorManager(MirrorConfig{Client: main, NodeName: cfg.NodeName, Logger: cfg.Logger}); err != nil {
		return nil, err
	}
	a.merger = &podsource.Merger{OnStatic: a.Mirrors.Update}
	a.recorder, a.stopRec = NewEventRecorder(events, cfg.NodeName, cfg.Logger)
	return a, nil
}

// Events is the recorder for podworker.Config.Events.
func (a *API) Events() record.EventRecorder { return a.recorder }

// SourcesReady is podworker.Config.SourcesReady: true once the API's pods
// are known.
func (a *API) SourcesReady() bool { return a.merger.AllReady() }

// OnStatus is podworker.Config.OnStatus.
func (a *API) OnStatus(pod *v1.Pod, status v1.PodStatus) { a.Status.OnStatus(pod, status) }

// OnTerminated is podworker.Config.OnTerminated.
func (a *API) OnTerminated(pod *v1.Pod) { a.Status.OnTerminated(pod) }

// Run runs every component until ctx ends or one fails. The static pods
// come in on file (nil: no static pod source); the full desired set goes
// out on out. The pod source starts once the Node is registered, so that
// pods are not run on a node the API does not know.
func (a *API) Run(ctx context.Context, file <-chan []*v1.Pod, out chan<- []*v1.Pod) error {
	defer a.stopRec()
	g, ctx := errgroup.WithContext(ctx)
	apiPods := make(chan podsource.APIPods)
	g.Go(func() error { return a.Node.Run(ctx) })
	g.Go(func() error { return a.Watch.Run(ctx) })
	g.Go(func() error { return a.Services.Run(ctx) })
	g.Go(func() error { return a.Runtimes.Run(ctx) })
	g.Go(func() error { return a.Lease.Run(ctx) })
	g.Go(func() error { return a.Status.Run(ctx) })
	g.Go(func() error { return a.Mirrors.Run(ctx) })
	g.Go(func() error { return a.merger.Run(ctx, file, apiPods, out) })
	g.Go(func() error {
		select {
		case <-a.Node.Registered():
		case <-ctx.Done():
			return nil
		}
		return a.Source.Run(ctx, apiPods)
	})
	return g.Wait()
}
