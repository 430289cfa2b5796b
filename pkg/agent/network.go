package agent

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
