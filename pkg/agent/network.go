package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/network"
)

// kubenet's names: its network and bridge (the kubelet's kubenet used
// cbr0). The file sorts before other configurations in the directory,
// so the runtime, which loads the first, takes it.
const (
	kubenetNetwork = "kubenet"
	kubenetBridge  = "cbr0"
	kubenetFile    = "05-kubenet.conflist"
)

// newKubenet builds the agent's own pod network (--network-plugin=kubenet,
// joined only); nil otherwise. onChange is called when its condition
// changes. It opens nothing that needs closing: Kubenet.Run does.
func newKubenet(o Options, rc *rest.Config, nodeName string, onChange func(), log *slog.Logger) (*network.Kubenet, error) {
	if o.Flags.NetworkPlugin != agentconfig.NetworkPluginKubenet {
		return nil, nil
	}
	if rc == nil {
		return nil, fmt.Errorf("--network-plugin=%s needs an API server (--kubeconfig): the pod CIDR is the Node's", agentconfig.NetworkPluginKubenet)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubenet API client: %w", err)
	}
	log = log.With("component", "kubenet")
	masq, err := network.NewMasquerade()
	if err != nil {
		log.Warn("pod traffic to other nodes will be masqueraded by the bridge plugin", "err", err)
		masq = nil
	}
	w, err := network.NewConfigWriter(network.ConfigWriterConfig{
		Dir: o.Flags.CNIConfDir, FileName: kubenetFile, BinDirs: o.Flags.CNIBinDirs, Logger: log,
		CNI: network.CNIConfig{
			NetworkName: kubenetNetwork, Bridge: kubenetBridge, MTU: o.Flags.NetworkPluginMTU,
			HairpinMode: true, IPMasq: masq == nil, DataDir: filepath.Join(o.Flags.RootDir, "cni", "networks"),
		},
	})
	if err != nil {
		return nil, err
	}
	routes, err := network.NewRoutes(network.RoutesConfig{Logger: log})
	if err != nil {
		return nil, err
	}
	var clusterCIDRs []string
	if o.Flags.ClusterCIDR != "" {
		clusterCIDRs = []string{o.Flags.ClusterCIDR}
	} else {
		log.Warn("no --cluster-cidr: other nodes' pod CIDRs are checked only for their size and for holding node addresses")
	}
	return network.NewKubenet(network.KubenetConfig{
		Client: client, NodeName: nodeName, Writer: w, Routes: routes, ClusterCIDRs: clusterCIDRs,
		Masquerade: masq, Logger: log, OnChange: onChange,
	})
}

// Pacing of the network readiness checks: the kubelet's runtime status
// period while ready; while not, from networkRetryMin doubling to it, which
// is how long the runtime takes to load a configuration just written.
const (
	runtimeStatusPeriod = 5 * time.Second
	networkRetryMin     = 100 * time.Millisecond
	networkCheckTimeout = 10 * time.Second
)

// errNetworkUnknown is the state before the first check (the kubelet's
// ErrNetworkUnknown).
var errNetworkUnknown = errors.New("network state unknown")

// runtimeStatus is the CRI call the network gate makes.
type runtimeStatus interface {
	Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error)
}

// networkGate says whether pods that are not hostNetwork may join the pod
// network, as the kubelet's runtime state does with the runtime's
// NetworkReady condition. With kubenet the agent is the network plugin
// too, as the kubelet's kubenet was under dockershim: the network is not
// ready until kubenet has written its CNI configuration and the runtime
// has loaded it. The runtime's NetworkReady alone is not enough: a
// runtime whose configuration directory holds another network (make
// run's containerd has its fallback bridge there) reports ready before
// kubenet knows the node's pod CIDR, and would give pods its addresses.
type networkGate struct {
	rt      runtimeStatus
	kubenet podNetworkConfig // nil: the runtime's NetworkReady alone
	log     *slog.Logger
	// onChange is told when the answer changes (set before Run).
	onChange func()
	kick     chan struct{}

	mu  sync.Mutex
	err error
}

// podNetworkConfig is kubenet as the gate sees it.
type podNetworkConfig interface {
	Configured() (ok bool, message string)
}

func newNetworkGate(rt runtimeStatus, kubenet *network.Kubenet, log *slog.Logger) *networkGate {
	g := &networkGate{rt: rt, log: log.With("component", "network-readiness"), kick: make(chan struct{}, 1), err: errNetworkUnknown}
	if kubenet != nil {
		g.kubenet = kubenet
	}
	return g
}

// Err is nil when pods may join the pod network, else why not.
func (g *networkGate) Err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}

// Check asks again at once (kubenet's configuration changed).
func (g *networkGate) Check() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// Run checks until ctx ends: at once, on every Check, and periodically.
func (g *networkGate) Run(ctx context.Context) {
	retry := networkRetryMin
	for {
		g.refresh(ctx)
		next := runtimeStatusPeriod
		if g.Err() != nil {
			next, retry = retry, min(2*retry, runtimeStatusPeriod)
		} else {
			retry = networkRetryMin
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-g.kick:
			retry = networkRetryMin
		case <-t.C:
		}
		t.Stop()
	}
}

// refresh checks once and tells onChange when the answer changed.
func (g *networkGate) refresh(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, networkCheckTimeout)
	defer cancel()
	err, ok := g.check(ctx)
	if !ok {
		return // the runtime did not answer: the last answer stands
	}
	g.mu.Lock()
	changed := (err == nil) != (g.err == nil) || (err != nil && err.Error() != g.err.Error())
	g.err = err
	g.mu.Unlock()
	if !changed {
		return
	}
	if err != nil {
		g.log.Warn("pod network not ready: pods that are not hostNetwork wait", "err", err)
	} else {
		g.log.Info("pod network ready")
	}
	if g.onChange != nil {
		g.onChange()
	}
}

// check is the network's state; ok is false when it could not be read.
func (g *networkGate) check(ctx context.Context) (err error, ok bool) {
	if g.kubenet != nil {
		if written, msg := g.kubenet.Configured(); !written {
			if msg == network.MessageWaitingForPodCIDR {
				msg = "kubenet does not have netConfig. This is most likely due to lack of PodCIDR" // upstream kubenet's
			}
			return pluginNotReady(msg), true
		}
	}
	resp, err := g.rt.Status(ctx, g.kubenet != nil)
	if err != nil {
		g.log.Warn("container runtime status", "err", err)
		return nil, false
	}
	var cond *criv1.RuntimeCondition
	for _, c := range resp.GetStatus().GetConditions() {
		if c.GetType() == criv1.NetworkReady {
			cond = c
		}
	}
	switch {
	case cond == nil:
		return fmt.Errorf("container runtime network not ready: %s condition not reported", criv1.NetworkReady), true
	case !cond.Status:
		return fmt.Errorf("container runtime network not ready: %s=false reason:%s message:%s", criv1.NetworkReady, cond.Reason, cond.Message), true
	}
	if g.kubenet != nil && !runtimeLoaded(resp.GetInfo(), kubenetNetwork) {
		return pluginNotReady("the container runtime has not loaded kubenet's CNI configuration yet"), true
	}
	return nil, true
}

// pluginNotReady is the runtime's NetworkReady condition as it reads when
// the agent's own network plugin is not ready (dockershim's wording).
func pluginNotReady(why string) error {
	return fmt.Errorf("container runtime network not ready: %s=false reason:NetworkPluginNotReady message:nodeagent: network plugin is not ready: %s", criv1.NetworkReady, why)
}

// runtimeLoaded tells whether the runtime's verbose status names the CNI
// network among the ones it loaded (containerd's "cniconfig": go-cni's
// ConfigResult). A runtime that does not say is taken at its NetworkReady
// word.
func runtimeLoaded(info map[string]string, name string) bool {
	raw, ok := info["cniconfig"]
	if !ok {
		return true
	}
	var cfg struct {
		Networks []struct {
			Config struct{ Name string }
		}
	}
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil || len(cfg.Networks) == 0 {
		return true // not in the form we know: no word either way
	}
	for _, n := range cfg.Networks {
		if n.Config.Name == name {
			return true
		}
	}
	return false
}
