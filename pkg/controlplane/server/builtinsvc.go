package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeagent/nodeagent/pkg/netutil"
)

// KubeDNSServiceIP is the cluster DNS service's address, kubeadm's: the
// tenth of the service range. Agents that run the service proxy give it
// to pods as their nameserver.
const KubeDNSServiceIP = "10.96.0.10"

// builtinReconcileInterval is how often the built-in endpoints are put
// back (kube-apiserver's endpoint reconciler runs every 10s).
const builtinReconcileInterval = 10 * time.Second

// managedByServer marks the EndpointSlices the server writes itself (the
// endpointslice controller leaves slices of selector-less services alone).
const managedByServer = "nodeagent-server"

// builtinEndpoint is one selector-less service the servers point at
// themselves: default/kubernetes (the API) and kube-system/kube-dns.
type builtinEndpoint struct {
	namespace, name string
	ips             []string // sorted
	ports           []v1.EndpointPort
}

// self is what this server records in its lease: where pods reach its
// API (none when it binds loopback) and its DNS, when it serves on port
// 53 of an address pods reach.
func (c *Config) self() serverLease {
	return serverLease{APIIP: c.advertiseIP(), DNSIP: c.ClusterDNSIP()}
}

// builtinEndpoints plans what the live servers (sorted) are pointed at
// by: every API address on the secure port, as kube-apiserver's lease
// endpoint reconciler, and every DNS address when any server serves one.
func builtinEndpoints(securePort int, servers []serverLease) []builtinEndpoint {
	var api, dns []string
	for _, s := range servers {
		api = append(api, s.APIIP)
		if s.DNSIP != "" {
			dns = append(dns, s.DNSIP)
		}
	}
	if len(api) == 0 {
		return nil
	}
	slices.Sort(dns)
	out := []builtinEndpoint{{namespace: metav1.NamespaceDefault, name: "kubernetes", ips: api,
		ports: []v1.EndpointPort{{Name: "https", Port: int32(securePort), Protocol: v1.ProtocolTCP}}}}
	if len(dns) > 0 {
		out = append(out, builtinEndpoint{namespace: metav1.NamespaceSystem, name: "kube-dns", ips: slices.Compact(dns),
			ports: []v1.EndpointPort{{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}, {Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP}}})
	}
	return out
}

// advertiseIP is where pods reach the API server: the bind address when
// it names one, else this host's IP.
func (c *Config) advertiseIP() string {
	if ip := net.ParseIP(c.BindAddress); ip != nil && !ip.IsUnspecified() {
		if ip.IsLoopback() {
			return ""
		}
		return ip.String()
	}
	return netutil.HostIP()
}

// kubeDNSService is the kube-system/kube-dns Service, as kubeadm's
// CoreDNS add-on names it, without a selector: its endpoint is the server.
func kubeDNSService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kube-dns", Namespace: metav1.NamespaceSystem, Labels: map[string]string{
			"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true", "kubernetes.io/name": "CoreDNS",
		}},
		Spec: v1.ServiceSpec{
			ClusterIP: KubeDNSServiceIP,
			Ports: []v1.ServicePort{
				{Name: "dns", Port: 53, Protocol: v1.ProtocolUDP, TargetPort: intstr.FromInt32(53)},
				{Name: "dns-tcp", Port: 53, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(53)},
			},
		},
	}
}

func (b builtinEndpoint) endpoints() *v1.Endpoints {
	addrs := make([]v1.EndpointAddress, 0, len(b.ips))
	for _, ip := range b.ips {
		addrs = append(addrs, v1.EndpointAddress{IP: ip})
	}
	return &v1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace},
		Subsets:    []v1.EndpointSubset{{Addresses: addrs, Ports: b.ports}},
	}
}

func (b builtinEndpoint) slice() *discoveryv1.EndpointSlice {
	ready := true
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: b.namespace, Labels: map[string]string{
			discoveryv1.LabelServiceName: b.name, discoveryv1.LabelManagedBy: managedByServer,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for _, ip := range b.ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	for _, p := range b.ports {
		s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol})
	}
	return s
}

// errNotOurs: a built-in service name holds a service someone else made.
var errNotOurs = errors.New("the service exists with a selector or another cluster IP: not ours, left alone")

// runBuiltinEndpoints keeps this server's lease and the built-in
// services' endpoints (every live server) until ctx ends, then removes
// the lease and reconciles once more, as kube-apiserver does on shutdown.
func runBuiltinEndpoints(ctx context.Context, cfg Config, leases serverLeases, client kubernetes.Interface, log *slog.Logger) error {
	self := cfg.self()
	if self.APIIP == "" {
		log.Info("no address pods can reach: this server is not in default/kubernetes", "bindAddress", cfg.BindAddress)
	}
	t := time.NewTicker(builtinReconcileInterval)
	defer t.Stop()
	reported := map[string]bool{}
	for {
		reconcileBuiltin(ctx, cfg, leases, self, client, reported, log)
		select {
		case <-ctx.Done():
			stop, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if self.APIIP != "" {
				if err := leases.remove(stop, self.APIIP); err != nil {
					log.Warn("remove this server's lease", "err", err)
				}
				self.APIIP = "" // reconciled without it
				reconcileBuiltin(stop, cfg, leases, self, client, reported, log)
			}
			return nil
		case <-t.C:
		}
	}
}

// reconcileBuiltin renews self's lease (when pods can reach it) and puts
// the built-in endpoints to the live servers.
func reconcileBuiltin(ctx context.Context, cfg Config, leases serverLeases, self serverLease, client kubernetes.Interface, reported map[string]bool, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, builtinReconcileInterval)
	defer cancel()
	if self.APIIP != "" {
		if err := leases.renew(ctx, self); err != nil {
			log.Warn("renew this server's lease", "err", err)
			return
		}
	}
	live, err := leases.live(ctx)
	if err != nil {
		log.Warn("list the servers' leases", "err", err)
		return
	}
	for _, b := range builtinEndpoints(cfg.SecurePort, live) {
		err := ensureBuiltin(ctx, client, b)
		switch {
		case errors.Is(err, errNotOurs):
			if !reported[b.name] {
				log.Info("built-in service left alone", "service", b.namespace+"/"+b.name, "reason", err)
				reported[b.name] = true
			}
		case err != nil && ctx.Err() == nil:
			log.Warn("built-in service endpoints", "service", b.namespace+"/"+b.name, "err", err)
		}
	}
}

func ensureBuiltin(ctx context.Context, client kubernetes.Interface, b builtinEndpoint) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if b.name == "kube-dns" {
		// Looked up first: the create of an existing service fails on its
		// taken cluster IP before its name.
		svc, err := client.CoreV1().Services(b.namespace).Get(ctx, b.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			svc, err = client.CoreV1().Services(b.namespace).Create(ctx, kubeDNSService(), metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("service (clusterIP %s): %w", KubeDNSServiceIP, err)
		}
		if svc.Spec.Selector != nil || svc.Spec.ClusterIP != KubeDNSServiceIP {
			return errNotOurs // someone runs their own DNS (CoreDNS): leave it alone
		}
	}
	ep := b.endpoints()
	cur, err := client.CoreV1().Endpoints(b.namespace).Get(ctx, b.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.CoreV1().Endpoints(b.namespace).Create(ctx, ep, metav1.CreateOptions{})
	case err == nil && !equality.Semantic.DeepEqual(cur.Subsets, ep.Subsets):
		cur.Subsets = ep.Subsets
		_, err = client.CoreV1().Endpoints(b.namespace).Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpoints: %w", err)
	}
	sl := b.slice()
	curSl, err := client.DiscoveryV1().EndpointSlices(b.namespace).Get(ctx, b.name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = client.DiscoveryV1().EndpointSlices(b.namespace).Create(ctx, sl, metav1.CreateOptions{})
	case err == nil && (!equality.Semantic.DeepEqual(curSl.Endpoints, sl.Endpoints) || !equality.Semantic.DeepEqual(curSl.Ports, sl.Ports)):
		curSl.Endpoints, curSl.Ports, curSl.Labels = sl.Endpoints, sl.Ports, sl.Labels
		_, err = client.DiscoveryV1().EndpointSlices(b.namespace).Update(ctx, curSl, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("endpoint slice: %w", err)
	}
	return nil
}
