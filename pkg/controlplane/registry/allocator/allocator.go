package allocator

import (
	"fmt"
	"math/big"
	"net"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The node port range, kubeadm's default --service-node-port-range.
const (
	NodePortMin = 30000
	NodePortMax = 32767
)

// Allocator chooses from one cluster IP range (IPv4) and the node port
// range.
type Allocator struct {
	cidr      *net.IPNet
	nodePorts [2]int32
}

// New returns an allocator for the cluster IP range cidr; it panics on a
// malformed range (callers pass a constant).
func New(cidr string) *Allocator {
	_, n, err := net.ParseCIDR(cidr)
	if err != nil {
		panic(err)
	}
	return &Allocator{cidr: n, nodePorts: [2]int32{NodePortMin, NodePortMax}}
}

// FirstIP is the range's first address after the network address, which
// the kubernetes service takes.
func (a *Allocator) FirstIP() string {
	ip := a.cidr.IP.To4()
	return net.IPv4(ip[0], ip[1], ip[2], ip[3]+1).String()
}

// Allocate fills in spec.clusterIP(s) and node ports a new service asked
// the server to choose, and checks the ones it chose itself, against
// inUse (every stored service).
func (a *Allocator) Allocate(svc *v1.Service, inUse []*v1.Service) error {
	usedIPs, usedPorts := map[string]bool{}, map[int32]bool{}
	for _, s := range inUse {
		usedIPs[s.Spec.ClusterIP] = true
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				usedPorts[p.NodePort] = true
			}
		}
	}
	if svc.Spec.Type != v1.ServiceTypeExternalName && svc.Spec.ClusterIP != v1.ClusterIPNone {
		if svc.Spec.ClusterIP == "" {
			ip, err := a.freeIP(usedIPs)
			if err != nil {
				return err
			}
			svc.Spec.ClusterIP = ip
		} else if err := a.checkIP(svc.Spec.ClusterIP, usedIPs); err != nil {
			return apierrors.NewInvalid(v1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name,
				field.ErrorList{field.Invalid(field.NewPath("spec", "clusterIPs").Index(0), svc.Spec.ClusterIP, err.Error())})
		}
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if svc.Spec.Type == v1.ServiceTypeNodePort || svc.Spec.Type == v1.ServiceTypeLoadBalancer {
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				var err error
				if p.NodePort, err = a.freeNodePort(usedPorts); err != nil {
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

// freeIP picks the first free address of the range after the network
// address and .1 (kept for the kubernetes service).
func (a *Allocator) freeIP(used map[string]bool) (string, error) {
	base := big.NewInt(0).SetBytes(a.cidr.IP.To4())
	ones, bits := a.cidr.Mask.Size()
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

func (a *Allocator) checkIP(s string, used map[string]bool) error {
	ip := net.ParseIP(s)
	switch {
	case ip == nil:
		return fmt.Errorf("must be a valid IP address")
	case !a.cidr.Contains(ip):
		return fmt.Errorf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s", s, s, a.cidr)
	case used[s]:
		return fmt.Errorf("failed to allocate IP %s: provided IP is already allocated", s)
	}
	return nil
}

func (a *Allocator) freeNodePort(used map[int32]bool) (int32, error) {
	for p := a.nodePorts[0]; p <= a.nodePorts[1]; p++ {
		if !used[p] {
			return p, nil
		}
	}
	return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}
