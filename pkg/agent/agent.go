package agent

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/apiclient"
	"github.com/nodeagent/nodeagent/pkg/clientcert"
	"github.com/nodeagent/nodeagent/pkg/metrics"
	"github.com/nodeagent/nodeagent/pkg/netutil"
	"github.com/nodeagent/nodeagent/pkg/network"
	"github.com/nodeagent/nodeagent/pkg/objectmanager"
	filesource "github.com/nodeagent/nodeagent/pkg/podsource/file"
	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/podworker"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/server"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// Version is the agent's version, set at build time.
var Version = "v0.1.0-dev"

// plegPeriod is the kubelet's relist period.
const plegPeriod = time.Second

// Options are the resolved settings the agent runs with.
type Options struct {
	Config *agentconfig.Config
	Flags  *agentconfig.Flags
	Logger *slog.Logger
	// RESTConfig, when set, joins the API server it points at instead of
	// Flags.Kubeconfig (for an agent started in-process by the server).
	RESTConfig *rest.Config
}

// Run starts the agent and blocks until ctx ends. Pods keep running after
// it returns, as they do when the kubelet stops.
func Run(ctx context.Context, o Options) error {
	cfg, log := o.Config, o.Logger
	nodeName, err := NodeName(o.Flags.HostnameOverride)
	if err != nil {
		return err
	}
	nodeIP := o.Flags.NodeIP
	if nodeIP == "" {
		nodeIP = netutil.HostIP()
	}
	log = log.With("node", nodeName)
	rc, rotating, err := joinConfig(ctx, o, nodeName, log)
	if err != nil {
		return err
	}
	// Mode-dependent defaults (readOnlyPort) are known only now: check
	// the result again for port clashes.
	cfg.SetModeDefaults(rc != nil)
	if _, err := cfg.Validate(); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	setOOMScore(log, *cfg.OOMScoreAdj)
	for _, d := range []string{o.Flags.RootDir, cfg.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", d, err)
		}
	}
	mtr := metrics.New(nodeName)
	rt, version, err := connectRuntime(ctx, cfg, log, runtime.WithCallObserver(mtr.RuntimeCall))
	if err != nil {
		return err
	}
	defer rt.Close()

	var api *apiclient.API
	var gate *networkGate
	kubenet, err := newKubenet(o, rc, nodeName, func() { api.Node.Trigger(); gate.Check() }, log)
	if err != nil {
		return err
	}
	gate = newNetworkGate(rt, kubenet, log)
	gate.refresh(ctx) // pods are not held back by a state not yet read
	traces, stopTracing, err := newTraces(ctx, cfg, nodeName, log)
	if err != nil {
		return err
	}
	defer stopTracing()
	api, err = newAPI(o, rc, rt, nodeName, nodeIP, kubenet, gate.Err, traces.StatusWritten, log)
	if err != nil {
		return err
	}
	if api != nil && nodeAPIEnabled(cfg, true) {
		api.Node.SetKubeletPort(*cfg.Port)
	}
	// The eviction manager's, read before it runs: with the pressure of
	// its checkpoint, so that admission and the first node status see a
	// pressure still in its transition period at once.
	press := restoredPressure(o.Flags.RootDir, log)
	if api != nil {
		api.Node.SetPressure(press.Conditions)
	}
	wcfg := podworker.Config{
		Runtime:      rt,
		Images:       rt,
		RuntimeName:  version.RuntimeName,
		NodeName:     nodeName,
		NodeIP:       nodeIP,
		RootDir:      o.Flags.RootDir,
		PodLogsDir:   cfg.PodLogsDir,
		CgroupRoot:   cgroupRoot(cfg),
		FlatCgroups:  cfg.CgroupsPerQOS != nil && !*cfg.CgroupsPerQOS,
		PodPidsLimit: *cfg.PodPidsLimit,
		DNS:          dnsSettings(cfg),
		Allocatable:  admissionAllocatable(o),
		NodeLabels:   o.Flags.NodeLabels,
		NodeTaints:   cfg.RegisterWithTaints,
		Logger:       log,
		ResyncPeriod: cfg.SyncFrequency.Duration,

		ContainerGCPeriod: o.Flags.ContainerGCPeriod,
		CgroupMetrics:     mtr.CgroupManagerOperation,

		ParallelImagePulls:    !*cfg.SerializeImagePulls,
		MaxParallelImagePulls: maxParallelImagePulls(cfg),
		RegistryPullQPS:       float32(*cfg.RegistryPullQPS),
		RegistryBurst:         int(cfg.RegistryBurst),

		SeccompDefault: *cfg.SeccompDefault,

		Metrics:      mtr,
		ProbeMetrics: mtr,
		Tracer:       traces,

		AllowedUnsafeSysctls: cfg.AllowedUnsafeSysctls,

		Network: gate.Err,

		Pressure: press.Conditions,
	}
	host := volume.Host{RootDir: o.Flags.RootDir, NodeName: nodeName, Mounter: volume.SysMounter{}, Allocatable: wcfg.Allocatable}
	var objects *objectmanager.Manager
	if api != nil {
		if objects, err = newObjectManagers(cfg, api, log); err != nil {
			return err
		}
		getter := managedObjects{Objects: api.Objects, managers: objects}
		host.Getter, wcfg.Objects, wcfg.References = getter, getter, objects
	}
	wcfg.Volumes = volume.NewManager(host, volume.DefaultPlugins(host), log.With("component", "volumes"))
	if wcfg.UserNamespaces, err = newUserNamespaces(cfg, o.Flags.RootDir, log); err != nil {
		return err
	}
	if api != nil {
		wcfg.Events, wcfg.OnStatus, wcfg.OnTerminated = api.Events(), api.OnStatus, api.OnTerminated
		wcfg.SourcesReady = api.SourcesReady
		wcfg.Node = api.Watch.Node // admission sees the labels and taints set through the API
		wcfg.Services = api.Services
		wcfg.RuntimeClasses = api.Runtimes
	}
	var recorder record.EventRecorder
	if api != nil {
		recorder = api.Events()
	}
	if err := setUpNodeCgroups(ctx, cfg, nodeName, "/sys/fs/cgroup", recorder, mtr.CgroupManagerOperation, log.With("component", "node-cgroups")); err != nil {
		return err
	}
	mgr, err := podworker.New(wcfg)
	if err != nil {
		return err
	}
	gate.onChange = mgr.NetworkChanged
	if api != nil {
		gate.onChange = func() { mgr.NetworkChanged(); api.Node.Trigger() } // Ready follows the gate
	}
	return runComponents(ctx, o, parts{mgr: mgr, rt: rt, api: api, objects: objects, rc: rc, rotating: rotating, kubenet: kubenet, network: gate, metrics: mtr, traces: traces, pressure: press, nodeName: nodeName, nodeIP: nodeIP, log: log})
}

// certDir is --cert-dir, by default <root-dir>/pki, as the kubelet's:
// the client and serving pairs.
func certDir(o Options) string {
	if o.Flags.CertDir != "" {
		return o.Flags.CertDir
	}
	return filepath.Join(o.Flags.RootDir, "pki")
}

// joinConfig is restConfig after the client TLS bootstrap
// (--bootstrap-kubeconfig) and, with rotateCertificates, on the rotating
// client certificate.
func joinConfig(ctx context.Context, o Options, nodeName string, log *slog.Logger) (*rest.Config, *clientcert.Rotating, error) {
	certDir := certDir(o)
	if o.RESTConfig == nil && o.Flags.BootstrapKubeconfig != "" {
		if err := clientcert.LoadClientCert(ctx, clientcert.Bootstrap{
			Kubeconfig: o.Flags.Kubeconfig, BootstrapKubeconfig: o.Flags.BootstrapKubeconfig,
			CertDir: certDir, NodeName: nodeName, Logger: log.With("component", "tls-bootstrap"),
		}); err != nil {
			return nil, nil, fmt.Errorf("client TLS bootstrap: %w", err)
		}
	}
	rc, err := restConfig(o)
	if err != nil || rc == nil || !o.Config.RotateCertificates {
		return rc, nil, err
	}
	rot, err := clientcert.NewRotating(clientcert.Rotation{Config: rc, CertDir: certDir, NodeName: nodeName, Logger: log.With("component", "client-certificate")})
	if err != nil {
		return nil, nil, fmt.Errorf("rotateCertificates: %w", err)
	}
	return rot.Config, rot, nil
}

// restConfig is the API client's configuration when a kubeconfig (or
// RESTConfig) is given; nil runs standalone.
func restConfig(o Options) (*rest.Config, error) {
	userAgent := "nodeagent/" + Version
	switch {
	case o.RESTConfig != nil:
		return apiclient.ClientConfig(o.RESTConfig, userAgent, clientLimits(o.Config)), nil
	case o.Flags.Kubeconfig != "":
		return apiclient.RESTConfig(o.Flags.Kubeconfig, userAgent, clientLimits(o.Config))
	}
	return nil, nil
}

// clientLimits are the configuration's kubeAPIQPS, kubeAPIBurst,
// eventRecordQPS and eventBurst.
func clientLimits(cfg *agentconfig.Config) apiclient.Limits {
	return apiclient.Limits{
		QPS: float32(*cfg.KubeAPIQPS), Burst: int(cfg.KubeAPIBurst),
		EventQPS: float32(*cfg.EventRecordQPS), EventBurst: int(cfg.EventBurst),
		HeartbeatTimeout: cfg.NodeStatusUpdateFrequency.Duration,
	}
}

// newAPI builds the API side when joined (rc is set); nil runs standalone.
// networkErr is the pod workers' network gate, which the Ready condition
// reports as the kubelet's does.
func newAPI(o Options, rc *rest.Config, rt *runtime.Client, nodeName, nodeIP string, kubenet *network.Kubenet, networkErr func() error, statusWritten func(*v1.Pod, *v1.PodStatus), log *slog.Logger) (*apiclient.API, error) {
	if rc == nil {
		return nil, nil
	}
	var netCond func() (v1.NodeCondition, bool)
	if kubenet != nil {
		netCond = kubenet.Condition
	}
	clients, err := apiclient.NewClients(rc, clientLimits(o.Config))
	if err != nil {
		return nil, err
	}
	log.Info("joining the API server", "server", rc.Host)
	return apiclient.New(apiclient.Config{
		Clients: clients, NodeName: nodeName, NodeIP: nodeIP, RootDir: ephemeralStorageDir(o),
		Capacity: capacity(o.Config), Runtime: rt, KubeletVersion: Version,
		RegisterWithTaints: o.Config.RegisterWithTaints, NodeLabels: o.Flags.NodeLabels,
		MaxPods: int64(o.Config.MaxPods), Reserved: o.Config.Reserved(), EvictionThresholds: evictionThresholds(o.Config),
		NodeStatusUpdateFrequency: o.Config.NodeStatusUpdateFrequency.Duration, NetworkCondition: netCond, NetworkErr: networkErr, StatusWritten: statusWritten, Logger: log,
		Images: rt, MaxImages: *o.Config.NodeStatusMaxImages,
	})
}

// parts are the assembled components runComponents starts.
type parts struct {
	mgr              *podworker.Manager
	rt               *runtime.Client
	api              *apiclient.API         // nil standalone
	objects          *objectmanager.Manager // nil standalone
	rc               *rest.Config           // nil standalone
	rotating         *clientcert.Rotating   // nil unless rotateCertificates (joined)
	kubenet          *network.Kubenet       // nil unless --network-plugin=kubenet
	network          *networkGate
	metrics          *metrics.Metrics
	traces           *podtrace.Log
	pressure         *pressure
	nodeName, nodeIP string
	log              *slog.Logger
}

// runComponents runs the agent's components in one errgroup until ctx
// ends (nil: a clean shutdown, pods keep running) or the first of them
// fails or stops (its outcome). Every component has returned when it
// does: kubenet and the service proxy, which write routes and nftables
// rules, do not outlive Run, and the pod manager, the PLEG and the log
// rotation finish their CRI calls before Run closes the runtime
// connection.
func runComponents(ctx context.Context, o Options, p parts) error {
	cfg, mgr, rt, api, nodeName, log := o.Config, p.mgr, p.rt, p.api, p.nodeName, p.log
	c := newComponents(ctx)
	gctx := c.ctx
	// A set-up error below stops and waits for what was started already.
	defer c.shutdown()

	file := make(chan []*v1.Pod, 1)
	if cfg.StaticPodPath == "" {
		if api == nil {
			log.Warn("no --pod-manifest-path: the agent runs no pods")
		}
		file <- nil
	} else {
		src, err := filesource.New(filesource.Config{Dir: cfg.StaticPodPath, NodeName: nodeName, ResyncPeriod: cfg.FileCheckFrequency.Duration, Logger: log})
		if err != nil {
			return err
		}
		c.run("", func() error { return src.Run(gctx, file) })
	}
	pods := file           // standalone: the static pods are the desired set
	if p.rotating != nil { // before the API clients: it stops after them
		c.run("client certificate rotation", func() error { return p.rotating.Run(gctx) })
	}
	if api != nil {
		merged := make(chan []*v1.Pod, 1)
		c.run("API client", func() error { return api.Run(gctx, file, merged) })
		c.run("object managers", func() error { return p.objects.Run(gctx) })
		pods = merged
	}
	events := make(chan runtime.PodEvent, 256)
	pleg := runtime.NewPLEG(rt, plegPeriod, log)
	pleg.Relisted, pleg.Listed = p.metrics.PLEGRelisted, p.metrics.PLEGListed
	c.helper(func() { pleg.Run(gctx, events) })
	rotation, err := newLogRotation(cfg, rt, log)
	if err != nil {
		return err
	}
	c.helper(func() { _ = rotation.Run(gctx) }) // nil once ctx ends
	c.run("", func() error { return mgr.Run(gctx, pods, events) })
	gc, err := newImageGC(gctx, o, p)
	if err != nil {
		return err
	}
	c.helper(func() { gc.Run(gctx) })
	ev, err := newEviction(gctx, o, p, gc)
	if err != nil {
		return err
	}
	c.helper(func() { ev.Run(gctx) })

	health := func() error {
		if err := pleg.Healthy(); err != nil {
			return fmt.Errorf("PLEG is not healthy: %w", err)
		}
		return nil
	}
	if port := *cfg.ReadOnlyPort; port != 0 {
		addr := net.JoinHostPort(cfg.ReadOnlyAddress(), strconv.Itoa(int(port)))
		_, done, err := server.Serve(gctx, addr, server.Handler(mgr, health), log)
		if err != nil {
			return err
		}
		c.run("read-only server", func() error { return <-done })
	}
	if port := *cfg.HealthzPort; port != 0 {
		addr := net.JoinHostPort(cfg.HealthzBindAddress, strconv.Itoa(int(port)))
		_, done, err := server.Serve(gctx, addr, server.HealthzHandler(health), log)
		if err != nil {
			return err
		}
		c.run("healthz server", func() error { return <-done })
	}
	if p.kubenet != nil {
		c.run("kubenet", func() error { return p.kubenet.Run(gctx) })
	}
	c.helper(func() { p.network.Run(gctx) })
	if runProxy, err := newServiceProxy(o, p.rc, p.metrics, log); err != nil {
		return err
	} else if runProxy != nil {
		c.run("service proxy", func() error { return runProxy(gctx) })
	}
	if done, err := startNodeAPI(gctx, o, p, health); err != nil {
		return err
	} else if done != nil {
		c.run("node API server", func() error { return <-done })
	}
	c.helper(func() {
		select {
		case <-mgr.Ready():
			log.Info("first sync done")
			if err := notifySystemd("READY=1"); err != nil {
				log.Warn("notify systemd", "err", err)
			}
		case <-gctx.Done():
		}
	})
	<-gctx.Done()
	if ctx.Err() != nil {
		log.Info("shutting down; pods keep running")
	}
	return c.wait()
}

// connectRuntime dials the CRI endpoint and waits until it answers, so a
// runtime that starts after the agent is picked up.
func connectRuntime(ctx context.Context, cfg *agentconfig.Config, log *slog.Logger, opts ...runtime.DialOption) (*runtime.Client, *criv1.VersionResponse, error) {
	rt, err := runtime.Dial(ctx, cfg.ContainerRuntimeEndpoint, cfg.RuntimeRequestTimeout.Duration, opts...)
	if err != nil {
		return nil, nil, err
	}
	for delay := time.Second; ; delay = min(2*delay, 30*time.Second) {
		vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		v, err := rt.Version(vctx, "v1")
		cancel()
		if err == nil {
			log.Info("connected to container runtime", "endpoint", cfg.ContainerRuntimeEndpoint,
				"runtime", v.RuntimeName, "version", v.RuntimeVersion, "criVersion", v.RuntimeApiVersion)
			return rt, v, nil
		}
		log.Error("container runtime not answering; retrying", "endpoint", cfg.ContainerRuntimeEndpoint, "err", err, "retryIn", delay)
		select {
		case <-ctx.Done():
			rt.Close()
			return nil, nil, ctx.Err()
		case <-time.After(delay):
		}
	}
}

// cgroupRoot is the kubelet's: "/" unless set. With cgroupsPerQOS off the
// pods run straight under it (flatCgroups).
func cgroupRoot(cfg *agentconfig.Config) string {
	if cfg.CgroupRoot == "" {
		return "/"
	}
	return cfg.CgroupRoot
}

func dnsSettings(cfg *agentconfig.Config) criconfig.DNS {
	s := criconfig.DNS{ClusterDNS: cfg.ClusterDNS, ClusterDomain: cfg.ClusterDomain}
	if cfg.ResolverConfig != nil {
		s.ResolvConf = *cfg.ResolverConfig
	}
	return s
}

// setOOMScore sets the agent's oom_score_adj (oomScoreAdj: -999 by
// default, which protects it from the OOM killer like the kubelet). It is
// the process's: `nodeagent server` runs its agent as a child process so
// that the control plane does not share it. Hosts without
// CAP_SYS_RESOURCE refuse lowering it: that is logged, not fatal.
func setOOMScore(log *slog.Logger, score int32) {
	if err := os.WriteFile("/proc/self/oom_score_adj", []byte(strconv.Itoa(int(score))), 0); err != nil {
		log.Warn("cannot set the agent's oom_score_adj; continuing without OOM protection", "oomScoreAdj", score, "err", err)
	}
}
