package sysctl

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/version"
)

func TestSafeSysctlsByKernel(t *testing.T) {
	for _, tc := range []struct {
		kernel      string // "" : unknown
		has, hasNot []string
	}{
		{"", []string{"kernel.shm_rmid_forced", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"},
			[]string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_rmem"}},
		{"3.10.0", []string{"net.ipv4.tcp_syncookies"}, []string{"net.ipv4.ip_local_reserved_ports"}},
		{"4.5.0", []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"},
			[]string{"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_notsent_lowat"}},
		{"4.6.0", []string{"net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_notsent_lowat"}, []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle"}},
		{"6.18.44-fc-v657", []string{"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle"}, []string{"net.core.somaxconn"}},
	} {
		var k *version.Version
		if tc.kernel != "" {
			k = version.MustParseGeneric(tc.kernel)
		}
		got := SafeSysctls(k)
		for _, n := range tc.has {
			if !slices.Contains(got, n) {
				t.Errorf("kernel %q: %s missing from %v", tc.kernel, n, got)
			}
		}
		for _, n := range tc.hasNot {
			if slices.Contains(got, n) {
				t.Errorf("kernel %q: %s must not be safe", tc.kernel, n)
			}
		}
	}
	if got := SafeSysctls(version.MustParseGeneric("6.1")); len(got) != len(safeSysctls) {
		t.Errorf("a recent kernel gets every safe sysctl: %v", got)
	}
}

func TestValidatePattern(t *testing.T) {
	for p, want := range map[string]string{
		"net.core.somaxconn": "",
		"net.core.*":         "",
		"net.*":              "",
		"net/ipv4/*":         "",
		"kernel.shm*":        "",
		"kernel.msg*":        "",
		"kernel.sem":         "",
		"fs.mqueue.*":        "",
		"user.*":             "",
		"kernel.domainname":  "",
		"*":                  `the sysctls "" are not known to be namespaced`,
		"kernel.*":           `the sysctls "kernel." are not known to be namespaced`,
		"vm.swappiness":      `the sysctls "vm.swappiness" are not known to be namespaced`,
		"net.*.foo":          `sysctl "net.*.foo" must have at most 253 characters and match regex`,
		"Net.core":           `sysctl "Net.core" must have at most 253 characters`,
		"":                   `sysctl "" must have at most`,
	} {
		err := ValidatePattern(p)
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: unexpected error %v", p, err)
		case want != "" && (err == nil || !strings.HasPrefix(err.Error(), want)):
			t.Errorf("%q: error %v, want prefix %q", p, err, want)
		}
	}
}

func podWith(hostNet, hostIPC bool, names ...string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
	for _, n := range names {
		p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
	}
	return p
}

func TestAdmitPod(t *testing.T) {
	safe := SafeSysctls(version.MustParseGeneric("6.1"))
	for _, tc := range []struct {
		name    string
		unsafe  []string
		pod     *v1.Pod
		message string // "" admitted
	}{
		{"no security context", nil, &v1.Pod{}, ""},
		{"no sysctls", nil, podWith(false, false), ""},
		{"safe", nil, podWith(false, false, "net.ipv4.ip_unprivileged_port_start", "kernel.shm_rmid_forced"), ""},
		{"safe with slashes", nil, podWith(false, false, "net/ipv4/ping_group_range"), ""},
		{"kernel-gated safe", nil, podWith(false, false, "net.ipv4.tcp_keepalive_time"), ""},
		{"unsafe", nil, podWith(false, false, "net.core.somaxconn"), `forbidden sysctl: "net.core.somaxconn" not allowlisted`},
		{"unsafe after a safe one", nil, podWith(false, false, "net.ipv4.ping_group_range", "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowlisted`},
		{"unsafe allowed by name", []string{"net.core.somaxconn"}, podWith(false, false, "net.core.somaxconn"), ""},
		{"unsafe allowed by wildcard", []string{"net.core.*"}, podWith(false, false, "net.core.somaxconn"), ""},
		{"wildcard with slashes", []string{"net/core/*"}, podWith(false, false, "net/core/somaxconn"), ""},
		{"wildcard does not cover others", []string{"net.core.*"}, podWith(false, false, "net.ipv6.conf.all.forwarding"), `forbidden sysctl: "net.ipv6.conf.all.forwarding" not allowlisted`},
		{"slashed name normalized", []string{"net.ipv4.conf.*"}, podWith(false, false, "net/ipv4/conf/eno2.100/rp_filter"), ""},
		{"safe net with hostNetwork", nil, podWith(true, false, "net.ipv4.ping_group_range"), `forbidden sysctl: "net.ipv4.ping_group_range" not allowed with host Net enabled`},
		{"unsafe net wildcard with hostNetwork", []string{"net.*"}, podWith(true, false, "net.core.somaxconn"), `forbidden sysctl: "net.core.somaxconn" not allowed with host Net enabled`},
		{"safe ipc with hostIPC", nil, podWith(false, true, "kernel.shm_rmid_forced"), `forbidden sysctl: "kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"msg wildcard with hostIPC", []string{"kernel.msg*"}, podWith(false, true, "kernel.msgmax"), `forbidden sysctl: "kernel.msgmax" not allowed with host IPC enabled`},
		{"mqueue with hostIPC", []string{"fs.mqueue.*"}, podWith(false, true, "fs.mqueue.msg_max"), `forbidden sysctl: "fs.mqueue.msg_max" not allowed with host IPC enabled`},
		{"ipc sysctl with hostNetwork only", []string{"kernel.sem"}, podWith(true, false, "kernel.sem"), ""},
		{"net sysctl with hostIPC only", nil, podWith(false, true, "net.ipv4.ping_group_range"), ""},
	} {
		a, err := NewAllowlist(append(slices.Clone(safe), tc.unsafe...))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := a.AdmitPod(tc.pod); got != tc.message {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.message)
		}
	}
}

func TestNewAllowlistRefusesUnknownNamespace(t *testing.T) {
	if _, err := NewAllowlist([]string{"net.core.*", "vm.*"}); err == nil || err.Error() != `the sysctls "vm." are not known to be namespaced` {
		t.Fatalf("got %v", err)
	}
}

func TestKernelVersion(t *testing.T) {
	if _, err := KernelVersion(); err != nil {
		t.Skip(err)
	}
	if _, err := SafeSysctlAllowlist(); err != nil {
		t.Fatal(err)
	}
}
