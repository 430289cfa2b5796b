package agent

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/knftables"

	"github.com/nodeagent/nodeagent/pkg/proxy"
)

// serviceProxyResync is the informers' resync: the proxier's own full
// resync (hourly) puts back rules changed behind its back.
const serviceProxyResync = 0

// newServiceProxy builds the node's service proxy (--service-proxy,
// joined only); nil run when it is off. Its kubeproxy_* metrics join the
// agent's /metrics through reg. A host where nftables does not work (no
// nft binary, too old, no permission) gets no service proxy and an error
// in the log, but runs its pods, as kubenet runs without its masquerade
// rules.
func newServiceProxy(o Options, rc *rest.Config, reg proxy.Registerer, log *slog.Logger) (run func(context.Context) error, err error) {
	if !o.Flags.ServiceProxy {
		return nil, nil
	}
	if rc == nil {
		return nil, fmt.Errorf("--service-proxy needs an API server (--kubeconfig)")
	}
	log = log.With("component", "service-proxy")
	nft, err := knftables.New(knftables.IPv4Family, proxy.TableName)
	if err != nil {
		log.Error("service proxy off: nftables unavailable (needs the nft binary); Service addresses do not work from this node", "err", err)
		return nil, nil
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("service proxy API client: %w", err)
	}
	factory := informers.NewSharedInformerFactory(client, serviceProxyResync)
	m := proxy.NewMetrics()
	if err := m.Register(reg); err != nil {
		return nil, fmt.Errorf("service proxy metrics: %w", err)
	}
	p, err := proxy.New(proxy.Config{ClusterCIDR: o.Flags.ClusterCIDR, NFT: nft, Informers: factory, Metrics: m, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("service proxy: %w", err)
	}
	return func(ctx context.Context) error {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		return p.Run(ctx)
	}, nil
}
