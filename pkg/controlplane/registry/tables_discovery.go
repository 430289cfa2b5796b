package registry

import (
	"fmt"
	"strconv"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var endpointSliceColumns = []metav1.TableColumnDefinition{
	nameColumn,
	col("AddressType", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["addressType"]),
	col("Ports", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["ports"]),
	col("Endpoints", "string", discoveryv1.EndpointSlice{}.SwaggerDoc()["endpoints"]),
	ageColumn,
}

func (b *builder) endpointSliceRow(s *discoveryv1.EndpointSlice) []interface{} {
	var ports, addrs []string
	for _, p := range s.Ports {
		switch {
		case p.Port != nil:
			ports = append(ports, strconv.Itoa(int(*p.Port)))
		case p.Name != nil:
			ports = append(ports, *p.Name)
		default:
			ports = append(ports, "*") // every port
		}
	}
	for _, ep := range s.Endpoints {
		addrs = append(addrs, ep.Addresses...)
	}
	return []interface{}{s.Name, string(s.AddressType), firstThree(ports), firstThree(addrs), b.age(s.ObjectMeta)}
}

// firstThree lists up to three items, then "+ N more...", as upstream's
// printer; "<unset>" when there are none.
func firstThree(items []string) string {
	const limit = 3
	switch {
	case len(items) == 0:
		return "<unset>"
	case len(items) > limit:
		return fmt.Sprintf("%s + %d more...", strings.Join(items[:limit], ","), len(items)-limit)
	}
	return strings.Join(items, ",")
}
