package allocator

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func svc(ip string, nodePorts ...int32) *v1.Service {
	s := &v1.Service{Spec: v1.ServiceSpec{ClusterIP: ip}}
	for _, p := range nodePorts {
		s.Spec.Ports = append(s.Spec.Ports, v1.ServicePort{NodePort: p})
	}
	return s
}

func TestFirstIP(t *testing.T) {
	if got := New("10.96.0.0/12").FirstIP(); got != "10.96.0.1" {
		t.Errorf("FirstIP = %s", got)
	}
}

// TestClusterIPOrder: above the static band first (KEP-3070), in order,
// then inside it from .2; never the network address, .1 or the last one.
func TestClusterIPOrder(t *testing.T) {
	for _, tc := range []struct {
		cidr  string
		inUse []*v1.Service
		want  string
	}{
		{"10.96.0.0/12", nil, "10.96.1.0"}, // band of 256
		{"10.96.0.0/12", []*v1.Service{svc("10.96.0.1"), svc("10.96.1.0"), svc("10.96.1.1")}, "10.96.1.2"},
		{"10.0.0.0/24", nil, "10.0.0.16"}, // band of 16
		{"10.0.0.0/28", nil, "10.0.0.2"},  // the band is the whole range
		{"10.0.0.0/28", []*v1.Service{svc("10.0.0.2"), svc("10.0.0.3")}, "10.0.0.4"},
	} {
		s := &v1.Service{}
		if err := New(tc.cidr).Allocate(s, tc.inUse); err != nil {
			t.Fatalf("%s: %v", tc.cidr, err)
		}
		if s.Spec.ClusterIP != tc.want || len(s.Spec.ClusterIPs) != 1 || s.Spec.ClusterIPs[0] != tc.want {
			t.Errorf("%s with %d in use: got %s %v, want %s", tc.cidr, len(tc.inUse), s.Spec.ClusterIP, s.Spec.ClusterIPs, tc.want)
		}
	}
}

func TestClusterIPFull(t *testing.T) {
	var inUse []*v1.Service
	for i := 2; i < 255; i++ { // 10.0.0.0/24: .2 to .254
		inUse = append(inUse, svc(fmt.Sprintf("10.0.0.%d", i)))
	}
	err := New("10.0.0.0/24").Allocate(&v1.Service{}, inUse)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate a serviceIP: range is full") {
		t.Errorf("full range: %v", err)
	}
}

func TestRequestedClusterIP(t *testing.T) {
	a := New("10.96.0.0/12")
	for _, tc := range []struct{ ip, want string }{
		{"10.96.0.10", ""},
		{"10.96.0.1", "failed to allocate IP 10.96.0.1: provided IP is already allocated"},
		{"192.168.0.1", "failed to allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"},
		{"x", "must be a valid IP address"},
	} {
		s := &v1.Service{Spec: v1.ServiceSpec{ClusterIP: tc.ip}}
		err := a.Allocate(s, []*v1.Service{svc("10.96.0.1")})
		if tc.want == "" {
			if err != nil || s.Spec.ClusterIPs[0] != tc.ip {
				t.Errorf("%s: %v %v", tc.ip, err, s.Spec.ClusterIPs)
			}
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterIPs[0]") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Invalid with %q", tc.ip, err, tc.want)
		}
	}
}

func TestNoClusterIP(t *testing.T) {
	a := New("10.96.0.0/12")
	for _, s := range []*v1.Service{
		{Spec: v1.ServiceSpec{Type: v1.ServiceTypeExternalName, ExternalName: "example.com"}},
		{Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone}},
	} {
		ip := s.Spec.ClusterIP
		if err := a.Allocate(s, nil); err != nil || s.Spec.ClusterIP != ip || s.Spec.ClusterIPs != nil {
			t.Errorf("%s service: %v %q %v", s.Spec.Type, err, s.Spec.ClusterIP, s.Spec.ClusterIPs)
		}
	}
}

func TestNodePorts(t *testing.T) {
	a := New("10.96.0.0/12")
	inUse := []*v1.Service{svc("10.96.0.1", 30000, 30002)}
	s := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Port: 80}, {Port: 81, NodePort: 30005}, {Port: 82}}}}
	if err := a.Allocate(s, inUse); err != nil {
		t.Fatal(err)
	}
	// From the bottom, in port order, skipping those in use.
	if got := []int32{s.Spec.Ports[0].NodePort, s.Spec.Ports[1].NodePort, s.Spec.Ports[2].NodePort}; !slices.Equal(got, []int32{30001, 30005, 30003}) {
		t.Errorf("node ports %v", got)
	}

	lb := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 80}}}}
	if err := a.Allocate(lb, inUse); err != nil || lb.Spec.Ports[0].NodePort != 30001 {
		t.Errorf("load balancer: %v port %d", err, lb.Spec.Ports[0].NodePort)
	}
	clusterIP := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeClusterIP, Ports: []v1.ServicePort{{Port: 80}}}}
	if err := a.Allocate(clusterIP, inUse); err != nil || clusterIP.Spec.Ports[0].NodePort != 0 {
		t.Errorf("ClusterIP service: %v port %d", err, clusterIP.Spec.Ports[0].NodePort)
	}

	taken := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Port: 80, NodePort: 30002}}}}
	if err := a.Allocate(taken, inUse); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ports[0].nodePort: Invalid value: 30002: provided port is already allocated") {
		t.Errorf("taken node port: %v", err)
	}
	twice := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Port: 80, NodePort: 31000}, {Port: 81, NodePort: 31000}}}}
	if err := a.Allocate(twice, nil); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ports[1].nodePort") {
		t.Errorf("one node port twice: %v", err)
	}
}

func TestNodePortsFull(t *testing.T) {
	a := New("10.96.0.0/12")
	var all []int32
	for p := int32(NodePortMin); p <= NodePortMax; p++ {
		all = append(all, p)
	}
	s := &v1.Service{Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Ports: []v1.ServicePort{{Port: 80}}}}
	err := a.Allocate(s, []*v1.Service{svc("10.96.0.1", all...)})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate a nodePort: range is full") {
		t.Errorf("full node port range: %v", err)
	}
}
