package criconfig

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// dnsConfig computes the sandbox's resolv.conf content from the pod's
// dnsPolicy and dnsConfig, as the kubelet's dns configurer does.
func dnsConfig(pod *v1.Pod, s DNS) (*criv1.DNSConfig, error) {
	policy := effectiveDNSPolicy(pod, s)
	cfg := &criv1.DNSConfig{}
	switch policy {
	case v1.DNSDefault:
		host, err := ParseResolvConf(s.ResolvConf)
		if err != nil {
			return nil, err
		}
		cfg = host
	case v1.DNSClusterFirst:
		host, err := ParseResolvConf(s.ResolvConf)
		if err != nil {
			return nil, err
		}
		cfg.Servers = append([]string{}, s.ClusterDNS...)
		cfg.Searches = append(clusterSearches(pod.Namespace, s.ClusterDomain), host.Searches...)
		cfg.Options = []string{"ndots:5"}
	case v1.DNSNone:
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = appendUnique(cfg.Servers, dc.Nameservers...)
		cfg.Searches = appendUnique(cfg.Searches, dc.Searches...)
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
	}
	if len(cfg.Searches) > maxDNSSearches {
		cfg.Searches = cfg.Searches[:maxDNSSearches]
	}
	return cfg, nil
}

// effectiveDNSPolicy resolves the kubelet's fallbacks: host-network pods
// use the host's DNS unless ClusterFirstWithHostNet, and ClusterFirst
// without a cluster DNS server falls back to Default.
func effectiveDNSPolicy(pod *v1.Pod, s DNS) v1.DNSPolicy {
	p := pod.Spec.DNSPolicy
	switch {
	case p == v1.DNSClusterFirstWithHostNet:
		p = v1.DNSClusterFirst
	case p == v1.DNSClusterFirst && pod.Spec.HostNetwork:
		p = v1.DNSDefault
	case p == "":
		p = v1.DNSClusterFirst
	}
	if p == v1.DNSClusterFirst && len(s.ClusterDNS) == 0 {
		p = v1.DNSDefault
	}
	return p
}

func clusterSearches(ns, domain string) []string {
	if domain == "" {
		return nil
	}
	return []string{ns + ".svc." + domain, "svc." + domain, domain}
}

func appendUnique(list []string, more ...string) []string {
	seen := map[string]bool{}
	for _, s := range list {
		seen[s] = true
	}
	for _, s := range more {
		if !seen[s] {
			list = append(list, s)
			seen[s] = true
		}
	}
	return list
}

// mergeDNSOptions lets the pod's options override same-named ones.
func mergeDNSOptions(base []string, extra []v1.PodDNSConfigOption) []string {
	idx := map[string]int{}
	out := append([]string{}, base...)
	for i, o := range out {
		name, _, _ := strings.Cut(o, ":")
		idx[name] = i
	}
	for _, o := range extra {
		s := o.Name
		if o.Value != nil {
			s += ":" + *o.Value
		}
		if i, ok := idx[o.Name]; ok {
			out[i] = s
			continue
		}
		idx[o.Name] = len(out)
		out = append(out, s)
	}
	return out
}

// ParseResolvConf reads nameserver, search/domain and options lines.
func ParseResolvConf(path string) (*criv1.DNSConfig, error) {
	cfg := &criv1.DNSConfig{}
	if path == "" {
		// The kubelet's choice when resolvConf is disabled.
		return &criv1.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read resolv.conf: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasPrefix(fields[0], ";") {
			continue
		}
		switch fields[0] {
		case "nameserver":
			cfg.Servers = append(cfg.Servers, fields[1])
		case "search", "domain":
			cfg.Searches = fields[1:]
		case "options":
			cfg.Options = append(cfg.Options, fields[1:]...)
		}
	}
	return cfg, sc.Err()
}
