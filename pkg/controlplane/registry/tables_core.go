package registry

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

var (
	namespaceColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Status", "string", "The status of the namespace"),
		ageColumn,
	}
	configMapColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Data", "string", v1.ConfigMap{}.SwaggerDoc()["data"]),
		ageColumn,
	}
	secretColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Type", "string", v1.Secret{}.SwaggerDoc()["type"]),
		col("Data", "string", v1.Secret{}.SwaggerDoc()["data"]),
		ageColumn,
	}
	serviceAccountColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Secrets", "string", v1.ServiceAccount{}.SwaggerDoc()["secrets"]),
		ageColumn,
	}
	endpointsColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Endpoints", "string", v1.Endpoints{}.SwaggerDoc()["subsets"]),
		ageColumn,
	}
	serviceColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Type", "string", v1.ServiceSpec{}.SwaggerDoc()["type"]),
		col("Cluster-IP", "string", v1.ServiceSpec{}.SwaggerDoc()["clusterIP"]),
		col("External-IP", "string", v1.ServiceSpec{}.SwaggerDoc()["externalIPs"]),
		col("Port(s)", "string", v1.ServiceSpec{}.SwaggerDoc()["ports"]),
		ageColumn,
		wideCol("Selector", "string", v1.ServiceSpec{}.SwaggerDoc()["selector"]),
	}
)

func (b *builder) serviceRow(s *v1.Service) []interface{} {
	clusterIP := "<none>"
	if len(s.Spec.ClusterIPs) > 0 {
		clusterIP = s.Spec.ClusterIPs[0]
	}
	ports := make([]string, len(s.Spec.Ports))
	for i, p := range s.Spec.Ports {
		if p.NodePort > 0 {
			ports[i] = fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, p.Protocol)
		} else {
			ports[i] = fmt.Sprintf("%d/%s", p.Port, p.Protocol)
		}
	}
	return []interface{}{
		s.Name, string(s.Spec.Type), clusterIP, serviceExternalIP(s), orNone(strings.Join(ports, ",")),
		b.age(s.ObjectMeta), labels.FormatLabels(s.Spec.Selector),
	}
}

func serviceExternalIP(s *v1.Service) string {
	switch s.Spec.Type {
	case v1.ServiceTypeClusterIP, v1.ServiceTypeNodePort:
		return orNone(strings.Join(s.Spec.ExternalIPs, ","))
	case v1.ServiceTypeLoadBalancer:
		var ips []string
		for _, ing := range s.Status.LoadBalancer.Ingress {
			if ing.IP != "" {
				ips = append(ips, ing.IP)
			} else if ing.Hostname != "" {
				ips = append(ips, ing.Hostname)
			}
		}
		ips = append(ips, s.Spec.ExternalIPs...)
		if len(ips) == 0 {
			return "<pending>"
		}
		return strings.Join(ips, ",")
	case v1.ServiceTypeExternalName:
		return s.Spec.ExternalName
	}
	return "<unknown>"
}

// formatEndpoints lists up to three ip:port pairs, then "+ N more...".
func formatEndpoints(e *v1.Endpoints) string {
	if len(e.Subsets) == 0 {
		return "<none>"
	}
	const max = 3
	var list []string
	count := 0
	add := func(s string) {
		count++
		if len(list) < max {
			list = append(list, s)
		}
	}
	for _, ss := range e.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, p := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(p.Port))))
			}
		}
	}
	ret := strings.Join(list, ",")
	if count > max {
		return fmt.Sprintf("%s + %d more...", ret, count-max)
	}
	return ret
}
