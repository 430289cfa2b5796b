package apiserver

import (
	"context"
	"fmt"
	"math/big"
	"net"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// The service IP range and node port range, as kubeadm's defaults.
var (
	serviceCIDR   = mustCIDR(registry.ServiceClusterIPRange)
	nodePortRange = [2]int32{30000, 32767}
)

const servicesResource = "/v1/services"

func mustCIDR(s string) *net.IPNet {
	_, n, err := net.ParseCIDR(s)
	if err != nil {
		panic(err)
	}
	return n
}

// serviceAllocator hands out cluster IPs and node ports. The API server is
// the only writer of services, so the set in use is what the service
// cache holds; the mutex keeps two creates from taking the same address.
type serviceAllocator struct {
	mu sync.Mutex
}

// allocate fills in spec.clusterIP(s) and node ports a new service asked
// the server to choose, and checks the ones it chose itself.
func (s *Server) allocateService(ctx context.Context, svc *v1.Service) error {
	usedIPs, usedPorts, err := s.servicesInUse(ctx)
	if err != nil {
		return err
	}
	if svc.Spec.Type != v1.ServiceTypeExternalName && svc.Spec.ClusterIP != v1.ClusterIPNone {
		if svc.Spec.ClusterIP == "" {
			ip, err := freeIP(usedIPs)
			if err != nil {
				return err
			}
			svc.Spec.ClusterIP = ip
		} else if err := checkIP(svc.Spec.ClusterIP, usedIPs); err != nil {
			return apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP, err.Error())})
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				if p.NodePort, err = freeNodePort(usedPorts); err != nil {
					return err
				}
			} else if usedPorts[p.NodePort] {
				return apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
					field.ErrorList{field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), p.NodePort, "provided port is already allocated")})
			}
			usedPorts[p.NodePort] = true
		}
	}
	return nil
}

func (s *Server) servicesInUse(ctx context.Context) (map[string]bool, map[int32]bool, error) {
	list, err := s.store(servicesResource).List(ctx, "", storageListAll(nil))
	if err != nil {
		return nil, nil, err
	}
	ips, ports := map[string]bool{}, map[int32]bool{}
	for _, obj := range list.Items {
		svc := obj.(*v1.Service)
		ips[svc.Spec.ClusterIP] = true
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				ports[p.NodePort] = true
			}
		}
	}
	return ips, ports, nil
}

// freeIP picks the first free address of the range after the network
// address and .1 (kept for the kubernetes service).
func freeIP(used map[string]bool) (string, error) {
	base := big.NewInt(0).SetBytes(serviceCIDR.IP.To4())
	ones, bits := serviceCIDR.Mask.Size()
	size := int64(1) << (bits - ones)
	// Upstream's static band (KEP-3070): chosen addresses come from above
	// it first, so that addresses asked for by number (kube-dns's .10)
	// are rarely taken already.
	band := min(max(16, size/16), 256)
	try := func(from, to int64) string {
		for off := from; off < to; off++ {
			ip := net.IP(big.NewInt(0).Add(base, big.NewInt(off)).FillBytes(make([]byte, 4))).String()
			if !used[ip] {
				return ip
			}
		}
		return ""
	}
	if ip := try(band, size-1); ip != "" {
		return ip, nil
	}
	if ip := try(2, band); ip != "" {
		return ip, nil
	}
	return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
}

func checkIP(s string, used map[string]bool) error {
	ip := net.ParseIP(s)
	switch {
	case ip == nil:
		return fmt.Errorf("must be a valid IP address")
	case !serviceCIDR.Contains(ip):
		return fmt.Errorf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", s, s, serviceCIDR)
	case used[s]:
		return fmt.Errorf("failed to allocate IP %s: provided IP is already allocated", s)
	}
	return nil
}

func freeNodePort(used map[int32]bool) (int32, error) {
	for p := nodePortRange[0]; p <= nodePortRange[1]; p++ {
		if !used[p] {
			return p, nil
		}
	}
	return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}

// kubernetesService is the default/kubernetes service every cluster has,
// pointing at the API server.
func kubernetesService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: firstServiceIP(),
			Ports: []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(6443)}},
			SessionAffinity: v1.ServiceAffinityNone,
		},
	}
}

func firstServiceIP() string {
	ip := serviceCIDR.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
}
