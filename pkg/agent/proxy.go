package agent

import (
	"context"
	"fmt"
	"log/slog"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/proxy"
)

// serviceProxyResync is the informers' resync: the proxier's own full
// resync (hourly) puts back rules changed behind its back.
const serviceProxyResync = 0

// newServiceProxy builds the node's service proxy (--service-proxy,
// joined only); nil run when it is off. Its kubeproxy_* metrics join the
// agent's /metrics through reg.
func newServiceProxy(o Options, rc *rest.Config, reg proxy.Registerer, log *slog.Logger) (run func(context.Context) error, err error) {
	if !o.Flags.ServiceProxy {
		return nil, nil
	}
	if rc == nil {
		return nil, fmt.Errorf("--service-proxy needs an API server (--kubeconfig)")
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
	p, err := proxy.New(proxy.Config{ClusterCIDR: o.Flags.ClusterCIDR, Informers: factory, Metrics: m,
		Logger: log.With("component", "service-proxy")})
	if err != nil {
		return nil, fmt.Errorf("service proxy: %w", err)
	}
	return func(ctx context.Context) error {
		factory.Start(ctx.Done())
		defer factory.Shutdown()
		return p.Run(ctx)
	}, nil
}
