package apiserver

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry/allocator"
)

// New services get their cluster IPs and node ports from the registry's
// BeginCreate hook (package allocator).

const servicesResource = "/v1/services"

// kubernetesService is the default/kubernetes service every cluster has,
// pointing at the API server.
func kubernetesService() *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: "default",
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: v1.ServiceSpec{
			Type:      v1.ServiceTypeClusterIP,
			ClusterIP: allocator.New(registry.ServiceClusterIPRange).FirstIP(),
			Ports: []v1.ServicePort{{Name: "https", Protocol: v1.ProtocolTCP, Port: 443,
				TargetPort: intstr.FromInt32(6443)}},
			SessionAffinity: v1.ServiceAffinityNone,
		},
	}
}
