package criconfig

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

func sandboxPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "shop", "0a1b2c"
	pod.Labels = map[string]string{"app": "web"}
	pod.Annotations = map[string]string{"note": "n"}
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox:1"}}
	return pod
}

func TestBuildSandboxConfig(t *testing.T) {
	pod := sandboxPod()
	pod.Spec.SecurityContext = &v1.PodSecurityContext{
		RunAsUser: ptrTo(int64(1000)), Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_local_port_range", Value: "1024 65000"}},
	}
	pod.Spec.Containers[0].Ports = []v1.ContainerPort{
		{ContainerPort: 80, HostPort: 8080},
		{ContainerPort: 53, HostPort: 5353, Protocol: v1.ProtocolUDP, HostIP: "127.0.0.1"},
		{ContainerPort: 9090}, // no host port: nothing to map
	}
	dns := &criv1.DNSConfig{Servers: []string{"10.96.0.10"}}
	cfg := buildSandboxConfig(pod, sandboxInputs{Attempt: 3, LogDir: "/var/log/pods/shop_web_0a1b2c", DNS: dns})

	wantMeta := &criv1.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "0a1b2c", Attempt: 3}
	if !reflect.DeepEqual(cfg.Metadata, wantMeta) {
		t.Errorf("metadata = %v, want %v", cfg.Metadata, wantMeta)
	}
	wantLabels := map[string]string{"app": "web", runtime.LabelPodName: "web", runtime.LabelPodNamespace: "shop", runtime.LabelPodUID: "0a1b2c"}
	if !reflect.DeepEqual(cfg.Labels, wantLabels) || !reflect.DeepEqual(cfg.Annotations, map[string]string{"note": "n"}) {
		t.Errorf("labels/annotations = %v / %v", cfg.Labels, cfg.Annotations)
	}
	if cfg.LogDirectory != "/var/log/pods/shop_web_0a1b2c" || cfg.DnsConfig != dns || cfg.Hostname != "web" {
		t.Errorf("logDir/dns/hostname = %q/%v/%q", cfg.LogDirectory, cfg.DnsConfig, cfg.Hostname)
	}
	wantPorts := []*criv1.PortMapping{
		{Protocol: criv1.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
		{Protocol: criv1.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
	}
	if !reflect.DeepEqual(cfg.PortMappings, wantPorts) {
		t.Errorf("port mappings = %v, want %v", cfg.PortMappings, wantPorts)
	}
	sc := cfg.Linux.SecurityContext
	if sc.RunAsUser.GetValue() != 1000 || sc.Privileged || sc.NamespaceOptions.Network != criv1.NamespaceMode_POD {
		t.Errorf("sandbox security = %v", sc)
	}
	if cfg.Linux.Sysctls["net.ipv4.ip_local_port_range"] != "1024 65000" || cfg.Linux.CgroupParent != "" {
		t.Errorf("sysctls/cgroup parent = %v/%q", cfg.Linux.Sysctls, cfg.Linux.CgroupParent)
	}
	if got, ok := runtime.PodRefFromLabels(cfg.Labels); !ok || got != (runtime.PodRef{UID: "0a1b2c", Name: "web", Namespace: "shop"}) {
		t.Errorf("PodRefFromLabels(sandbox labels) = %v, %v", got, ok)
	}
}

func TestSandboxPrivileged(t *testing.T) {
	cases := []struct {
		name string
		spec func(*v1.PodSpec)
		want bool
	}{
		{"unprivileged", func(*v1.PodSpec) {}, false},
		{"privileged app container", func(s *v1.PodSpec) {
			s.Containers[0].SecurityContext = &v1.SecurityContext{Privileged: ptrTo(true)}
		}, true},
		{"privileged init container", func(s *v1.PodSpec) {
			s.InitContainers = []v1.Container{{Name: "sysctl", SecurityContext: &v1.SecurityContext{Privileged: ptrTo(true)}}}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := sandboxPod()
			tc.spec(&pod.Spec)
			if got := buildSandboxConfig(pod, sandboxInputs{}).Linux.SecurityContext.Privileged; got != tc.want {
				t.Errorf("sandbox privileged = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b" // 64 chars, cut at 63 leaves a trailing '-'
	cases := []struct {
		name, podName, hostname string
		hostNetwork             bool
		want                    string
	}{
		{"pod name", "web", "", false, "web"},
		{"spec.hostname wins", "web", "custom", false, "custom"},
		{"truncated to 63 without trailing dash", long, "", false, strings.Repeat("a", 62)},
		{"long spec.hostname", "web", strings.Repeat("h", 70), false, strings.Repeat("h", 63)},
		{"host network leaves the hostname to the runtime", "web", "custom", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := sandboxPod()
			pod.Name, pod.Spec.Hostname, pod.Spec.HostNetwork = tc.podName, tc.hostname, tc.hostNetwork
			if got := buildSandboxConfig(pod, sandboxInputs{}).Hostname; got != tc.want {
				t.Errorf("hostname = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPodCgroupParent(t *testing.T) {
	both := func(v string) v1.ResourceList {
		return v1.ResourceList{v1.ResourceCPU: resource.MustParse(v), v1.ResourceMemory: resource.MustParse(v + "Gi")}
	}
	cases := []struct {
		name, root string
		res        v1.ResourceRequirements
		want       string
	}{
		{"guaranteed", "/", v1.ResourceRequirements{Requests: both("1"), Limits: both("1")}, "/kubepods/pod0a1b2c"},
		{"burstable", "/", v1.ResourceRequirements{Requests: both("1")}, "/kubepods/burstable/pod0a1b2c"},
		{"best effort", "/", v1.ResourceRequirements{}, "/kubepods/besteffort/pod0a1b2c"},
		{"custom root", "/agent/", v1.ResourceRequirements{}, "/agent/kubepods/besteffort/pod0a1b2c"},
		{"disabled", "", v1.ResourceRequirements{}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := sandboxPod()
			pod.Spec.Containers[0].Resources = tc.res
			if got := buildSandboxConfig(pod, sandboxInputs{CgroupRoot: tc.root}).Linux.CgroupParent; got != tc.want {
				t.Errorf("cgroup parent = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestDNSConfig(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	content := "# host resolver\n; old comment\nnameserver 10.0.0.2\nnameserver 10.0.0.3\n" +
		"search example.com corp.local\noptions ndots:2 timeout:1\n"
	if err := os.WriteFile(resolv, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := DNS{ResolvConf: resolv, ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"}
	hostOnly := DNS{ResolvConf: resolv}
	host := &criv1.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3"}, Searches: []string{"example.com", "corp.local"},
		Options: []string{"ndots:2", "timeout:1"}}
	clusterFirst := &criv1.DNSConfig{Servers: []string{"10.96.0.10"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.local"},
		Options:  []string{"ndots:5"}}
	cases := []struct {
		name        string
		policy      v1.DNSPolicy
		hostNetwork bool
		podConfig   *v1.PodDNSConfig
		settings    DNS
		want        *criv1.DNSConfig
		wantErr     bool
	}{
		{name: "Default uses the host resolv.conf", policy: v1.DNSDefault, settings: cluster, want: host},
		{name: "ClusterFirst", policy: v1.DNSClusterFirst, settings: cluster, want: clusterFirst},
		{name: "empty policy is ClusterFirst", settings: cluster, want: clusterFirst},
		{name: "ClusterFirst without cluster DNS falls back to Default", policy: v1.DNSClusterFirst, settings: hostOnly, want: host},
		{name: "ClusterFirst without a cluster domain keeps the host searches", policy: v1.DNSClusterFirst,
			settings: DNS{ResolvConf: resolv, ClusterDNS: []string{"10.96.0.10"}},
			want:     &criv1.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"example.com", "corp.local"}, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst on the host network is Default", policy: v1.DNSClusterFirst, hostNetwork: true, settings: cluster, want: host},
		{name: "ClusterFirstWithHostNet on the host network", policy: v1.DNSClusterFirstWithHostNet, hostNetwork: true,
			settings: cluster, want: clusterFirst},
		{name: "None takes only the pod's dnsConfig", policy: v1.DNSNone, settings: cluster,
			podConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"my.dns"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("3")}}},
			want: &criv1.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"my.dns"}, Options: []string{"ndots:3"}}},
		{name: "dnsConfig merges, deduplicates and overrides options", policy: v1.DNSClusterFirst, settings: cluster,
			podConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "10.96.0.10"}, Searches: []string{"extra.io", "cluster.local"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptrTo("2")}, {Name: "edns0"}}},
			want: &criv1.DNSConfig{Servers: []string{"10.96.0.10", "1.1.1.1"},
				Searches: append(append([]string{}, clusterFirst.Searches...), "extra.io"), Options: []string{"edns0", "ndots:2"}}},
		{name: "at most three nameservers", policy: v1.DNSDefault, settings: hostOnly,
			podConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8"}},
			want:      &criv1.DNSConfig{Servers: []string{"10.0.0.2", "10.0.0.3", "1.1.1.1"}, Searches: host.Searches, Options: host.Options}},
		{name: "missing resolv.conf is an error", policy: v1.DNSDefault,
			settings: DNS{ResolvConf: filepath.Join(t.TempDir(), "nope")}, wantErr: true},
		{name: "no resolv.conf: Default gets localhost and search \".\"", policy: v1.DNSDefault, settings: DNS{},
			want: &criv1.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := sandboxPod()
			pod.Spec.DNSPolicy, pod.Spec.HostNetwork, pod.Spec.DNSConfig = tc.policy, tc.hostNetwork, tc.podConfig
			got, err := dnsConfig(pod, tc.settings)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want an error, got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Option order carries no meaning (upstream builds them from a map).
			sort.Strings(got.Options)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("dns config\n got: %v\nwant: %v", got, tc.want)
			}
		})
	}
}

func TestDNSSearchLimit(t *testing.T) {
	pod := sandboxPod()
	pod.Spec.DNSPolicy = v1.DNSNone
	pod.Spec.DNSConfig = &v1.PodDNSConfig{}
	for i := 0; i < 40; i++ {
		pod.Spec.DNSConfig.Searches = append(pod.Spec.DNSConfig.Searches, "s"+strings.Repeat("x", i)+".example")
	}
	got, err := dnsConfig(pod, DNS{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Searches) != 32 || got.Searches[0] != "s.example" {
		t.Errorf("searches: %d, first %q; want the first 32", len(got.Searches), got.Searches[0])
	}
}

// TestSandboxConfigFields covers each field SandboxConfig sets, one case
// a field, through the API the worker calls. The label and annotation keys
// are spelled out: crictl, log collectors and a restarted agent read them.
func TestSandboxConfigFields(t *testing.T) {
	node := Node{PodLogsDir: "/var/log/pods"}
	cases := []struct {
		name    string
		pod     func(*v1.Pod)
		node    func(*Node)
		attempt uint32
		field   func(*criv1.PodSandboxConfig) any
		want    any
	}{
		{name: "metadata carries the attempt", attempt: 2,
			field: func(c *criv1.PodSandboxConfig) any { return c.Metadata },
			want:  &criv1.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "0a1b2c", Attempt: 2}},
		{name: "log directory under the node's pod logs",
			field: func(c *criv1.PodSandboxConfig) any { return c.LogDirectory },
			want:  "/var/log/pods/shop_web_0a1b2c"},
		{name: "DNS from the node's settings",
			node:  func(n *Node) { n.DNS = DNS{} },
			field: func(c *criv1.PodSandboxConfig) any { return c.DnsConfig },
			want:  &criv1.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		{name: "port mappings, SCTP",
			pod: func(p *v1.Pod) {
				p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 7, HostPort: 7007, Protocol: v1.ProtocolSCTP}}
			},
			field: func(c *criv1.PodSandboxConfig) any { return c.PortMappings },
			want:  []*criv1.PortMapping{{Protocol: criv1.Protocol_SCTP, ContainerPort: 7, HostPort: 7007}}},
		{name: "labels: the pod's and the kubelet's",
			field: func(c *criv1.PodSandboxConfig) any { return c.Labels },
			want: map[string]string{"app": "web", "io.kubernetes.pod.name": "web",
				"io.kubernetes.pod.namespace": "shop", "io.kubernetes.pod.uid": "0a1b2c"}},
		{name: "annotations: the pod's and the sandbox hash",
			field: func(c *criv1.PodSandboxConfig) any { return c.Annotations },
			want:  map[string]string{"note": "n", "nodeagent.io/sandbox-hash": runtime.HashSandbox(defaultDNSPod())}},
		{name: "hostname",
			pod:   func(p *v1.Pod) { p.Spec.Hostname = "h1" },
			field: func(c *criv1.PodSandboxConfig) any { return c.Hostname },
			want:  "h1"},
		{name: "host network: node network namespace",
			pod:   func(p *v1.Pod) { p.Spec.HostNetwork = true },
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.SecurityContext.NamespaceOptions },
			want: &criv1.NamespaceOption{Network: criv1.NamespaceMode_NODE, Pid: criv1.NamespaceMode_CONTAINER, Ipc: criv1.NamespaceMode_POD,
				UsernsOptions: nodeUserns()}},
		{name: "user namespace: the node's unless hostUsers is false",
			pod:   func(p *v1.Pod) { p.Spec.HostUsers = ptrTo(true) },
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.SecurityContext.NamespaceOptions.UsernsOptions },
			want:  nodeUserns()},
		{name: "user namespace: hostUsers false, the pod's (mappings not yet allocated)",
			pod:   func(p *v1.Pod) { p.Spec.HostUsers = ptrTo(false) },
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.SecurityContext.NamespaceOptions.UsernsOptions },
			want:  &criv1.UserNamespace{Mode: criv1.NamespaceMode_POD}},
		{name: "security context: user, group, supplemental groups",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptrTo(int64(1)), RunAsGroup: ptrTo(int64(2)), SupplementalGroups: []int64{3}}
			},
			field: func(c *criv1.PodSandboxConfig) any {
				sc := c.Linux.SecurityContext
				return []any{sc.RunAsUser.GetValue(), sc.RunAsGroup.GetValue(), sc.SupplementalGroups, sc.Privileged}
			},
			want: []any{int64(1), int64(2), []int64{3}, false}},
		{name: "no sysctls",
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.Sysctls },
			want:  map[string]string(nil)},
		{name: "sysctls",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}}
			},
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.Sysctls },
			want:  map[string]string{"kernel.shm_rmid_forced": "1"}},
		{name: "sysctls with slashes in dotted form",
			pod: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{
					{Name: "net/ipv4/ping_group_range", Value: "0 0"}, {Name: "net/ipv4/conf/eno2.100/rp_filter", Value: "1"}}}
			},
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.Sysctls },
			want:  map[string]string{"net.ipv4.ping_group_range": "0 0", "net.ipv4.conf.eno2/100.rp_filter": "1"}},
		{name: "cgroup parent under the node's root",
			node:  func(n *Node) { n.CgroupRoot = "/" },
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.CgroupParent },
			want:  "/kubepods/besteffort/pod0a1b2c"},
		{name: "cgroupsPerQOS off: the node's root itself",
			node:  func(n *Node) { n.CgroupRoot, n.FlatCgroups = "/agent/", true },
			field: func(c *criv1.PodSandboxConfig) any { return c.Linux.CgroupParent },
			want:  "/agent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod, n := defaultDNSPod(), node
			if tc.pod != nil {
				tc.pod(pod)
			}
			if tc.node != nil {
				tc.node(&n)
			}
			cfg, err := SandboxConfig(pod, n, tc.attempt)
			if err != nil {
				t.Fatal(err)
			}
			if got := tc.field(cfg); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// defaultDNSPod is sandboxPod with the host's DNS, so that the cases need
// no resolv.conf.
func defaultDNSPod() *v1.Pod {
	pod := sandboxPod()
	pod.Spec.DNSPolicy = v1.DNSDefault
	return pod
}

func TestSandboxConfigDNSError(t *testing.T) {
	n := Node{DNS: DNS{ResolvConf: filepath.Join(t.TempDir(), "missing")}}
	if cfg, err := SandboxConfig(sandboxPod(), n, 0); err == nil {
		t.Errorf("SandboxConfig = %v, want the resolv.conf error", cfg)
	}
}

func nodeUserns() *criv1.UserNamespace { return &criv1.UserNamespace{Mode: criv1.NamespaceMode_NODE} }

func podUserns(hostID uint32) *criv1.UserNamespace {
	m := []*criv1.IDMapping{{HostId: hostID, ContainerId: 0, Length: 65536}}
	return &criv1.UserNamespace{Mode: criv1.NamespaceMode_POD, Uids: m, Gids: m}
}

// The allocated mappings go into the sandbox's namespace options.
func TestWithUserNamespace(t *testing.T) {
	pod := defaultDNSPod()
	pod.Spec.HostUsers = ptrTo(false)
	cfg, err := SandboxConfig(pod, Node{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	WithUserNamespace(cfg, podUserns(65536*3))
	if got := cfg.Linux.SecurityContext.NamespaceOptions.UsernsOptions; !reflect.DeepEqual(got, podUserns(65536*3)) {
		t.Errorf("userns = %v", got)
	}
}
