package registry

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func validSlice() *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  meta("web-abc12"),
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses:  []string{"10.244.0.5"},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			NodeName:   ptr.To("node-1"),
			Hostname:   ptr.To("web-0"),
		}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](80), Protocol: ptr.To(v1.ProtocolTCP)}},
	}
}

func TestEndpointSliceDefaults(t *testing.T) {
	s := &discoveryv1.EndpointSlice{Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}}
	endpointSlices.Default(s)
	if p := s.Ports[0]; p.Name == nil || *p.Name != "" || p.Protocol == nil || *p.Protocol != v1.ProtocolTCP {
		t.Errorf("defaulted port %+v, want name \"\" and TCP", p)
	}
}

func TestEndpointSliceValidation(t *testing.T) {
	if errs := endpointSlices.Validate(validSlice()); len(errs) > 0 {
		t.Fatalf("valid slice: %v", errs)
	}
	tests := []struct {
		name   string
		mutate func(*discoveryv1.EndpointSlice)
		want   []string
	}{
		{"no address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" },
			[]string{"FieldValueRequired addressType"}},
		{"legacy IP type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IP" },
			[]string{"FieldValueNotSupported addressType"}},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil },
			[]string{"FieldValueRequired endpoints[0].addresses"}},
		{"bad IP", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"10.0.0"} },
			[]string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"IPv6 in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::5"} },
			[]string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"loopback", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} },
			[]string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"link-local IPv6", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeIPv6
			s.Endpoints[0].Addresses = []string{"fe80::1"}
		}, []string{"FieldValueInvalid endpoints[0].addresses[0]"}},
		{"FQDN", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"db.example.com", "not_a_name"}
		}, []string{"FieldValueInvalid endpoints[0].addresses[1]"}},
		{"bad node name and hostname", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].NodeName, s.Endpoints[0].Hostname = ptr.To("Node_1"), ptr.To("a.b")
		}, []string{"FieldValueInvalid endpoints[0].nodeName", "FieldValueInvalid endpoints[0].hostname"}},
		{"zone in topology", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].DeprecatedTopology = map[string]string{v1.LabelTopologyZone: "a"}
		}, []string{"InternalError endpoints[0].deprecatedTopology[topology.kubernetes.io/zone]"}},
		{"hints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{
				ForZones: []discoveryv1.ForZone{{Name: "a"}, {Name: "a"}},
				ForNodes: []discoveryv1.ForNode{{Name: "Bad_Node"}},
			}
		}, []string{"FieldValueDuplicate endpoints[0].hints.forZones[1].name", "FieldValueInvalid endpoints[0].hints.forNodes[0].name"}},
		{"ports", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports,
				discoveryv1.EndpointPort{Name: ptr.To("http"), Protocol: ptr.To(v1.Protocol("ICMP"))},
				discoveryv1.EndpointPort{Name: ptr.To("Bad"), AppProtocol: ptr.To("not valid")})
		}, []string{"FieldValueDuplicate ports[1].name", "FieldValueNotSupported ports[1].protocol",
			"FieldValueInvalid ports[2].name", "FieldValueRequired ports[2].protocol", "FieldValueInvalid ports[2].appProtocol"}},
		{"bad labels", func(s *discoveryv1.EndpointSlice) {
			s.Labels = map[string]string{discoveryv1.LabelServiceName: "not a name"}
		},
			[]string{"FieldValueInvalid metadata.labels"}},
	}
	for _, tc := range tests {
		s := validSlice()
		tc.mutate(s)
		expectErrors(t, tc.name, endpointSlices.Validate(s), tc.want...)
	}
}

func TestEndpointSliceTooMany(t *testing.T) {
	s := validSlice()
	for len(s.Endpoints) <= maxSliceEndpoints {
		s.Endpoints = append(s.Endpoints, s.Endpoints[0])
	}
	expectErrors(t, "1001 endpoints", endpointSlices.Validate(s), "FieldValueTooMany endpoints")
}

func TestEndpointSliceUpdate(t *testing.T) {
	old := validSlice()
	old.Generation = 3
	// Addresses stored before the IP rules tightened may stay.
	old.Endpoints[0].Addresses = []string{"010.244.0.5"}
	s := old.DeepCopy()
	s.Labels = map[string]string{"a": "b"}
	endpointSlices.PrepareForUpdate(s, old)
	if s.Generation != 4 {
		t.Errorf("label change: generation %d, want 4", s.Generation)
	}
	if errs := endpointSlices.ValidateUpdate(s, old); len(errs) > 0 {
		t.Errorf("update keeping an old address: %v", errs)
	}
	same := s.DeepCopy()
	same.Annotations = map[string]string{"x": "y"}
	endpointSlices.PrepareForUpdate(same, s)
	if same.Generation != s.Generation {
		t.Errorf("annotation change: generation %d, want %d", same.Generation, s.Generation)
	}
	moved := s.DeepCopy()
	moved.AddressType = discoveryv1.AddressTypeIPv6
	moved.Endpoints[0].Addresses = []string{"fd00::5"}
	expectErrors(t, "address type change", endpointSlices.ValidateUpdate(moved, s), "FieldValueInvalid addressType")
	created := validSlice()
	endpointSlices.PrepareForCreate(created)
	if created.Generation != 1 {
		t.Errorf("created with generation %d, want 1", created.Generation)
	}
}

func TestEndpointSliceTable(t *testing.T) {
	now, reg := fixedNow(t)
	endpointSlices := reg.Get("discovery.k8s.io", "v1", "endpointslices")
	s := validSlice()
	s.CreationTimestamp = metav1.NewTime(now.Add(-5 * time.Minute))
	many := validSlice()
	many.Name, many.Ports = "many", append(many.Ports,
		discoveryv1.EndpointPort{Port: ptr.To[int32](443)}, discoveryv1.EndpointPort{Name: ptr.To("all")},
		discoveryv1.EndpointPort{})
	for _, ip := range []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"} {
		many.Endpoints = append(many.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}})
	}
	empty := &discoveryv1.EndpointSlice{ObjectMeta: meta("empty"), AddressType: discoveryv1.AddressTypeIPv6}
	cols, cells := rows(t, endpointSlices, false, s, many, empty)
	if got := strings.Join(cols, " "); got != "Name AddressType Ports Endpoints Age" {
		t.Errorf("columns %q", got)
	}
	want := [][]interface{}{
		{"web-abc12", "IPv4", "80", "10.244.0.5", "5m"},
		{"many", "IPv4", "80,443,all + 1 more...", "10.244.0.5,10.0.0.1,10.0.0.2 + 1 more...", "<unknown>"},
		{"empty", "IPv6", "<unset>", "<unset>", "<unknown>"},
	}
	for i := range want {
		for j := range want[i] {
			if cells[i][j] != want[i][j] {
				t.Errorf("row %d cell %s: got %v, want %v", i, cols[j], cells[i][j], want[i][j])
			}
		}
	}
}
