package criconfig

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: ip, Ports: ports},
	}
}

func port(name string, p int32, proto v1.Protocol) v1.ServicePort {
	return v1.ServicePort{Name: name, Port: p, Protocol: proto}
}

// kubernetesVars are the default namespace's kubernetes service's
// variables for 10.96.0.1:443 (port "https"), as the kubelet sets them.
var kubernetesVars = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
}

func merged(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestServiceEnv(t *testing.T) {
	apiserver := svc("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))
	for _, tc := range []struct {
		name     string
		ns       string
		links    bool
		services []*v1.Service
		want     map[string]string
	}{
		{name: "no services", ns: "ns", links: true, want: map[string]string{}},
		{name: "the API server's service only", ns: "ns", links: true, services: []*v1.Service{apiserver}, want: kubernetesVars},
		{
			name: "an unnamed port, protocol defaulted to TCP", ns: "ns", links: true,
			services: []*v1.Service{svc("ns", "web-front", "10.0.0.5", port("", 80, ""))},
			want: map[string]string{
				"WEB_FRONT_SERVICE_HOST":      "10.0.0.5",
				"WEB_FRONT_SERVICE_PORT":      "80",
				"WEB_FRONT_PORT":              "tcp://10.0.0.5:80",
				"WEB_FRONT_PORT_80_TCP":       "tcp://10.0.0.5:80",
				"WEB_FRONT_PORT_80_TCP_PROTO": "tcp",
				"WEB_FRONT_PORT_80_TCP_PORT":  "80",
				"WEB_FRONT_PORT_80_TCP_ADDR":  "10.0.0.5",
			},
		},
		{
			name: "named ports of several protocols; the first is _SERVICE_PORT and _PORT", ns: "ns", links: true,
			services: []*v1.Service{svc("ns", "dns", "10.0.0.10", port("dns-udp", 53, v1.ProtocolUDP), port("metrics", 9153, v1.ProtocolTCP), port("assoc", 7, v1.ProtocolSCTP))},
			want: map[string]string{
				"DNS_SERVICE_HOST":         "10.0.0.10",
				"DNS_SERVICE_PORT":         "53",
				"DNS_SERVICE_PORT_DNS_UDP": "53",
				"DNS_SERVICE_PORT_METRICS": "9153",
				"DNS_SERVICE_PORT_ASSOC":   "7",
				"DNS_PORT":                 "udp://10.0.0.10:53",
				"DNS_PORT_53_UDP":          "udp://10.0.0.10:53",
				"DNS_PORT_53_UDP_PROTO":    "udp",
				"DNS_PORT_53_UDP_PORT":     "53",
				"DNS_PORT_53_UDP_ADDR":     "10.0.0.10",
				"DNS_PORT_9153_TCP":        "tcp://10.0.0.10:9153",
				"DNS_PORT_9153_TCP_PROTO":  "tcp",
				"DNS_PORT_9153_TCP_PORT":   "9153",
				"DNS_PORT_9153_TCP_ADDR":   "10.0.0.10",
				"DNS_PORT_7_SCTP":          "sctp://10.0.0.10:7",
				"DNS_PORT_7_SCTP_PROTO":    "sctp",
				"DNS_PORT_7_SCTP_PORT":     "7",
				"DNS_PORT_7_SCTP_ADDR":     "10.0.0.10",
			},
		},
		{
			name: "an IPv6 cluster IP is bracketed in the URLs", ns: "ns", links: true,
			services: []*v1.Service{svc("ns", "v6", "fd00::5", port("", 8080, v1.ProtocolTCP))},
			want: map[string]string{
				"V6_SERVICE_HOST":        "fd00::5",
				"V6_SERVICE_PORT":        "8080",
				"V6_PORT":                "tcp://[fd00::5]:8080",
				"V6_PORT_8080_TCP":       "tcp://[fd00::5]:8080",
				"V6_PORT_8080_TCP_PROTO": "tcp",
				"V6_PORT_8080_TCP_PORT":  "8080",
				"V6_PORT_8080_TCP_ADDR":  "fd00::5",
			},
		},
		{
			name: "headless and ExternalName services give none", ns: "ns", links: true,
			services: []*v1.Service{
				apiserver,
				svc("ns", "headless", v1.ClusterIPNone, port("", 80, "")),
				{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ext"}, Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com"}},
			},
			want: kubernetesVars,
		},
		{
			name: "other namespaces' services give none", ns: "ns", links: true,
			services: []*v1.Service{apiserver, svc("other", "web", "10.0.0.7", port("", 80, "")), svc("default", "web", "10.0.0.8", port("", 80, ""))},
			want:     kubernetesVars,
		},
		{
			name: "the default namespace's own services for its pods", ns: "default", links: true,
			services: []*v1.Service{apiserver, svc("default", "db", "10.0.0.9", port("", 5432, ""))},
			want: merged(kubernetesVars, map[string]string{
				"DB_SERVICE_HOST": "10.0.0.9", "DB_SERVICE_PORT": "5432", "DB_PORT": "tcp://10.0.0.9:5432",
				"DB_PORT_5432_TCP": "tcp://10.0.0.9:5432", "DB_PORT_5432_TCP_PROTO": "tcp",
				"DB_PORT_5432_TCP_PORT": "5432", "DB_PORT_5432_TCP_ADDR": "10.0.0.9",
			}),
		},
		{
			name: "enableServiceLinks false: the API server's service only", ns: "ns", links: false,
			services: []*v1.Service{apiserver, svc("ns", "web", "10.0.0.5", port("", 80, ""))},
			want:     kubernetesVars,
		},
		{
			name: "enableServiceLinks false in default: the API server's service only", ns: "default", links: false,
			services: []*v1.Service{svc("default", "db", "10.0.0.9", port("", 5432, "")), apiserver},
			want:     kubernetesVars,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServiceEnv(tc.ns, tc.links, tc.services); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ServiceEnv = %v\nwant %v", got, tc.want)
			}
		})
	}
}

// A service called kubernetes in the pod's namespace wins over default's,
// whichever the list gives first, but only with enableServiceLinks.
func TestServiceEnvPodNamespaceWins(t *testing.T) {
	apiserver := svc("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP))
	own := svc("ns", "kubernetes", "10.0.0.42", port("", 8443, v1.ProtocolTCP))
	for _, list := range [][]*v1.Service{{apiserver, own}, {own, apiserver}} {
		env := ServiceEnv("ns", true, list)
		if env["KUBERNETES_SERVICE_HOST"] != "10.0.0.42" || env["KUBERNETES_SERVICE_PORT"] != "8443" {
			t.Errorf("links on, order %s/%s first: KUBERNETES_SERVICE_HOST:PORT = %s:%s, want the pod namespace's 10.0.0.42:8443",
				list[0].Namespace, list[0].Name, env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"])
		}
		if _, ok := env["KUBERNETES_SERVICE_PORT_HTTPS"]; ok {
			t.Errorf("default's variables mixed in: %v", env)
		}
		if env := ServiceEnv("ns", false, list); !reflect.DeepEqual(env, kubernetesVars) {
			t.Errorf("links off: %v, want default's kubernetes service's", env)
		}
	}
}

// The container's env and envFrom win over the service variables, which
// come after its own in name order; $(VAR) in env values, command and
// args may refer to them.
func TestMakeEnvServiceVariables(t *testing.T) {
	services := []*v1.Service{
		svc("default", "kubernetes", "10.96.0.1", port("https", 443, v1.ProtocolTCP)),
		svc("ns", "web", "10.0.0.5", port("", 80, "")),
	}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	c := &v1.Container{
		Name:    "c",
		Command: []string{"echo", "$(WEB_SERVICE_HOST)"},
		Args:    []string{"$(KUBERNETES_SERVICE_PORT)", "$(FROM_CM)"},
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		Env: []v1.EnvVar{
			{Name: "KUBERNETES_SERVICE_HOST", Value: "override"},
			{Name: "URL", Value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)/"},
		},
	}
	in := ContainerInputs{
		Services:   services,
		EnvObjects: EnvObjects{ConfigMaps: map[string]*v1.ConfigMap{"cfg": {Data: map[string]string{"WEB_PORT": "from-envfrom", "FROM_CM": "$(WEB_SERVICE_HOST)"}}}},
	}
	cfg, err := ContainerConfig(pod, c, Node{}, in)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	env := map[string]string{}
	for _, kv := range cfg.Envs {
		if _, dup := env[kv.Key]; dup {
			t.Errorf("%s twice", kv.Key)
		}
		keys = append(keys, kv.Key)
		env[kv.Key] = string(kv.Value)
	}
	for k, want := range map[string]string{
		"KUBERNETES_SERVICE_HOST": "override",
		"KUBERNETES_SERVICE_PORT": "443",
		"WEB_PORT":                "from-envfrom",
		"WEB_SERVICE_HOST":        "10.0.0.5",
		"URL":                     "http://10.0.0.5:80/",
		"FROM_CM":                 "$(WEB_SERVICE_HOST)", // envFrom values are not expanded
	} {
		if env[k] != want {
			t.Errorf("%s = %q, want %q", k, env[k], want)
		}
	}
	// The container's own first (envFrom's keys in order, then env), then
	// the service variables by name.
	if want := []string{"FROM_CM", "WEB_PORT", "KUBERNETES_SERVICE_HOST", "URL"}; !reflect.DeepEqual(keys[:4], want) {
		t.Errorf("first keys %v, want %v", keys[:4], want)
	}
	if keys[4] != "KUBERNETES_PORT" || keys[len(keys)-1] != "WEB_SERVICE_PORT" {
		t.Errorf("service variables not in name order after the container's: %v", keys)
	}
	if want := []string{"echo", "10.0.0.5"}; !reflect.DeepEqual(cfg.Command, want) {
		t.Errorf("command %v, want %v", cfg.Command, want)
	}
	if want := []string{"443", "$(WEB_SERVICE_HOST)"}; !reflect.DeepEqual(cfg.Args, want) {
		t.Errorf("args %v, want %v", cfg.Args, want)
	}

	// enableServiceLinks false: only the API server's service; no
	// services known (standalone): none at all.
	off := false
	pod.Spec.EnableServiceLinks = &off
	cfg, err = ContainerConfig(pod, &v1.Container{Name: "c"}, Node{}, ContainerInputs{Services: services})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range cfg.Envs {
		got[kv.Key] = string(kv.Value)
	}
	if !reflect.DeepEqual(got, kubernetesVars) {
		t.Errorf("enableServiceLinks false: %v, want %v", got, kubernetesVars)
	}
	if cfg, err = ContainerConfig(pod, &v1.Container{Name: "c"}, Node{}, ContainerInputs{}); err != nil || len(cfg.Envs) != 0 {
		t.Errorf("no services: envs %v, err %v", cfg.GetEnvs(), err)
	}
}
