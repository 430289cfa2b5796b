package server

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	clusterdns "github.com/nodeagent/nodeagent/pkg/controlplane/dns"
)

// TestClusterDNS runs the control plane with its DNS server on a free
// loopback port and resolves services created through client-go.
func TestClusterDNS(t *testing.T) {
	upstream := fakeUpstream(t, "192.0.2.7")
	dir := t.TempDir()
	dnsAddr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	r := start(t, Config{
		DataDir:        dir,
		SecurePort:     freePort(t),
		BindAddress:    "127.0.0.1",
		EtcdClientPort: freePort(t),
		EtcdPeerPort:   freePort(t),
		DNSAddress:     dnsAddr,
		DNSUpstreams:   []string{upstream},
	})
	defer r.stop(t)
	client := kubeClient(t, dir)

	// The API server's own service exists from the start.
	resolves(t, dnsAddr, "kubernetes.default.svc.cluster.local.", dns.TypeA, "10.96.0.1")
	// The DNS answers as its own identity, not the admin's: kube-system/kube-dns
	// (system:kube-dns from the bootstrap policy, nodeagent:cluster-dns).
	if _, err := client.CoreV1().ServiceAccounts("kube-system").Get(t.Context(), ClusterDNSServiceAccount, metav1.GetOptions{}); err != nil {
		t.Errorf("the cluster DNS's service account: %v", err)
	}
	if b, err := client.RbacV1().ClusterRoleBindings().Get(t.Context(), clusterDNSRoleName, metav1.GetOptions{}); err != nil ||
		!slices.Equal(b.Subjects, clusterDNSBinding().Subjects) {
		t.Errorf("binding %s: %+v %v", clusterDNSRoleName, b, err)
	}

	web, err := client.CoreV1().Services("default").Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
			Selector: map[string]string{"app": "web"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	resolves(t, dnsAddr, "web.default.svc.cluster.local.", dns.TypeA, web.Spec.ClusterIP)
	resolves(t, dnsAddr, "_http._tcp.web.default.svc.cluster.local.", dns.TypeSRV, "web.default.svc.cluster.local.")

	// A headless service without a selector, with its Endpoints written by hand.
	if _, err := client.CoreV1().Services("default").Create(t.Context(), &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec:       corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Name: "pg", Port: 5432}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Endpoints("default").Create(t.Context(), &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.244.0.5", Hostname: "db-0"}, {IP: "10.244.0.6"}},
			Ports:     []corev1.EndpointPort{{Name: "pg", Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	resolves(t, dnsAddr, "db.default.svc.cluster.local.", dns.TypeA, "10.244.0.5", "10.244.0.6")
	resolves(t, dnsAddr, "db-0.db.default.svc.cluster.local.", dns.TypeA, "10.244.0.5")

	// Names outside the cluster domain go to the upstream.
	resolves(t, dnsAddr, "example.org.", dns.TypeA, "192.0.2.7")
	resp := exchange(t, dnsAddr, "missing.default.svc.cluster.local.", dns.TypeA)
	if resp == nil || resp.Rcode != dns.RcodeNameError || len(resp.Ns) != 1 {
		t.Fatalf("missing service: %v", resp)
	}
}

func kubeClient(t *testing.T, dir string) kubernetes.Interface {
	t.Helper()
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// resolves waits until name's answer (its A records' IPs, or its SRV
// records' targets) is want, as the informers catch up with the API.
func resolves(t *testing.T, addr, name string, qtype uint16, want ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		got = nil
		resp := exchange(t, addr, name, qtype)
		if resp == nil {
			return false, nil
		}
		for _, rr := range resp.Answer {
			switch rr := rr.(type) {
			case *dns.A:
				got = append(got, rr.A.String())
			case *dns.SRV:
				got = append(got, rr.Target)
			}
		}
		slices.Sort(got)
		return slices.Equal(got, want), nil
	})
	if err != nil {
		t.Fatalf("%s %s: got %q, want %q", name, dns.TypeToString[qtype], got, want)
	}
}

// exchange asks addr over UDP; nil when the server does not answer (yet).
func exchange(t *testing.T, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	resp, _, err := (&dns.Client{Timeout: time.Second}).Exchange(new(dns.Msg).SetQuestion(name, qtype), addr)
	if err != nil {
		return nil
	}
	return resp
}

// fakeUpstream answers every A query with ip, on a free loopback UDP port.
func fakeUpstream(t *testing.T, ip string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg).SetReply(r)
		m.Answer = []dns.RR{&dns.A{Hdr: dns.RR_Header{Name: r.Question[0].Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60},
			A: net.ParseIP(ip)}}
		_ = w.WriteMsg(m)
	})}
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	go func() { _ = srv.ActivateAndServe() }()
	<-started
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func TestClusterDNSIP(t *testing.T) {
	for addr, want := range map[string]string{
		"":              "",
		"127.0.0.1:53":  "",
		"10.0.0.5:5353": "",
		"10.0.0.5:53":   "10.0.0.5",
	} {
		if got := (&Config{DNSAddress: addr}).ClusterDNSIP(); got != want {
			t.Errorf("ClusterDNSIP(%q) = %q, want %q", addr, got, want)
		}
	}
	if got := (&Config{DNSAddress: DefaultDNSAddress}).ClusterDNSIP(); net.ParseIP(got) == nil && got != "" {
		t.Errorf("ClusterDNSIP(%q) = %q, not an IP", DefaultDNSAddress, got)
	}
}

// The default address binds where pods reach the server, not every
// address of the host; the pods' and services' networks may recurse.
func TestClusterDNSListenAndACL(t *testing.T) {
	for addr, want := range map[string]string{
		"10.0.0.5:53":  "10.0.0.5:53",
		"127.0.0.1:53": "127.0.0.1:53",
	} {
		if got := (&Config{DNSAddress: addr}).dnsListenAddress(); got != want {
			t.Errorf("dnsListenAddress(%q) = %q, want %q", addr, got, want)
		}
	}
	if hostIP := clusterdns.HostIP(); hostIP != "" {
		if got, want := (&Config{DNSAddress: DefaultDNSAddress}).dnsListenAddress(), hostIP+":53"; got != want {
			t.Errorf("dnsListenAddress(%q) = %q, want %q", DefaultDNSAddress, got, want)
		}
	}
	cidrs, err := (&Config{}).dnsRecursionCIDRs()
	if want := "[10.244.0.0/16 10.96.0.0/12]"; err != nil || fmt.Sprint(cidrs) != want {
		t.Errorf("dnsRecursionCIDRs() = %v, %v; want %s", cidrs, err, want)
	}
	if cidrs, _ := (&Config{ClusterCIDR: "10.42.0.0/16"}).dnsRecursionCIDRs(); fmt.Sprint(cidrs) != "[10.42.0.0/16 10.96.0.0/12]" {
		t.Errorf("with --cluster-cidr 10.42.0.0/16: %v", cidrs)
	}
}
