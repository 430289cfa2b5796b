package criconfig

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestKernelHostname(t *testing.T) {
	// ".sub.ns.svc.cluster.local" is 25 characters.
	long := strings.Repeat("a", 40)
	cases := []struct {
		name    string
		spec    v1.PodSpec
		want    string
		wantErr string
	}{
		{name: "pod name", want: "web"},
		{name: "subdomain alone: the short name", spec: v1.PodSpec{Subdomain: "sub"}, want: "web"},
		{name: "setHostnameAsFQDN without subdomain: no FQDN, the short name",
			spec: v1.PodSpec{SetHostnameAsFQDN: ptr.To(true)}, want: "web"},
		{name: "setHostnameAsFQDN with subdomain: the FQDN",
			spec: v1.PodSpec{Hostname: "h", Subdomain: "sub", SetHostnameAsFQDN: ptr.To(true)}, want: "h.sub.ns.svc.cluster.local"},
		{name: "setHostnameAsFQDN false", spec: v1.PodSpec{Hostname: "h", Subdomain: "sub", SetHostnameAsFQDN: ptr.To(false)}, want: "h"},
		{name: "FQDN of exactly 64 characters",
			spec: v1.PodSpec{Hostname: long[:39], Subdomain: "sub", SetHostnameAsFQDN: ptr.To(true)}, want: long[:39] + ".sub.ns.svc.cluster.local"},
		{name: "FQDN of 65 characters fails",
			spec:    v1.PodSpec{Hostname: long, Subdomain: "sub", SetHostnameAsFQDN: ptr.To(true)},
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + long + ".sub.ns.svc.cluster.local is too long (64 characters is the max, 65 characters requested)"},
		{name: "hostnameOverride wins over hostname and subdomain",
			spec: v1.PodSpec{Hostname: "h", Subdomain: "sub", HostnameOverride: ptr.To("www.example.com")}, want: "www.example.com"},
		{name: "hostnameOverride of 64 characters is cut to 63",
			spec: v1.PodSpec{HostnameOverride: ptr.To(strings.Repeat("b", 62) + ".c")}, want: strings.Repeat("b", 62)},
		{name: "invalid hostnameOverride", spec: v1.PodSpec{HostnameOverride: ptr.To("Bad_Name")},
			wantErr: `pod HostnameOverride "Bad_Name" is not a valid DNS subdomain: `},
		{name: "invalid hostname", spec: v1.PodSpec{Hostname: "a.b"}, wantErr: `pod Hostname "a.b" is not a valid DNS label: `},
		{name: "invalid subdomain", spec: v1.PodSpec{Subdomain: "S"}, wantErr: `pod Subdomain "S" is not a valid DNS label: `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns"}, Spec: tc.spec}
			got, err := KernelHostname(pod, "cluster.local")
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("error = %v, want one starting with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("KernelHostname = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

func TestSandboxConfigHostname(t *testing.T) {
	pod := sandboxPod()
	pod.Spec.Hostname, pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "h", "sub", ptr.To(true)
	cfg, err := SandboxConfig(pod, Node{DNS: DNS{ClusterDomain: "cluster.local"}}, 0)
	if err != nil || cfg.Hostname != "h.sub."+pod.Namespace+".svc.cluster.local" {
		t.Fatalf("sandbox hostname = %q, %v", cfg.GetHostname(), err)
	}
	pod.Spec.HostNetwork = true
	if cfg, err = SandboxConfig(pod, Node{DNS: DNS{ClusterDomain: "cluster.local"}}, 0); err != nil || cfg.Hostname != "" {
		t.Errorf("host network sandbox hostname = %q, %v; want the runtime's", cfg.GetHostname(), err)
	}
	pod.Spec.HostNetwork, pod.Spec.Hostname = false, strings.Repeat("x", 50)
	if _, err = SandboxConfig(pod, Node{DNS: DNS{ClusterDomain: "cluster.local"}}, 0); err == nil || !strings.Contains(err.Error(), "is too long") {
		t.Errorf("a too long FQDN: err = %v", err)
	}
}
