package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateHostname(t *testing.T) {
	yes := true
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		spec v1.PodSpec
		want []string // field.Error strings
	}{
		{"hostnameOverride alone", v1.PodSpec{HostnameOverride: str("www.example.com")}, nil},
		{"hostnameOverride with hostname and subdomain", v1.PodSpec{Hostname: "h", Subdomain: "s", HostnameOverride: str("a.b")}, nil},
		{"hostnameOverride with setHostnameAsFQDN", v1.PodSpec{HostnameOverride: str("a.b"), SetHostnameAsFQDN: &yes},
			[]string{"spec.hostnameOverride: Forbidden: may not be specified when setHostnameAsFQDN is true"}},
		{"hostnameOverride with hostNetwork", v1.PodSpec{HostnameOverride: str("a.b"), HostNetwork: true},
			[]string{"spec.hostnameOverride: Forbidden: may not be specified when hostNetwork is true"}},
		{"hostnameOverride of 64 characters", v1.PodSpec{HostnameOverride: str(strings.Repeat("a", 62) + ".b")}, nil},
		{"hostnameOverride of 65 characters", v1.PodSpec{HostnameOverride: str(strings.Repeat("a", 63) + ".b")},
			[]string{"spec.hostnameOverride: Too long: may not be more than 64 bytes"}},
		{"hostnameOverride not a DNS subdomain", v1.PodSpec{HostnameOverride: str("Web_1")},
			[]string{`spec.hostnameOverride: Invalid value: "Web_1": a lowercase RFC 1123 subdomain must consist of`}},
		{"empty hostnameOverride", v1.PodSpec{HostnameOverride: str("")},
			[]string{`spec.hostnameOverride: Invalid value: "": a lowercase RFC 1123 subdomain must consist of`}},
		{"setHostnameAsFQDN without hostnameOverride", v1.PodSpec{Hostname: "h", Subdomain: "s", SetHostnameAsFQDN: &yes}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := validateHostname(&tc.spec, field.NewPath("spec"))
			if len(errs) != len(tc.want) {
				t.Fatalf("errors = %v, want %d: %q", errs, len(tc.want), tc.want)
			}
			for i, e := range errs {
				if !strings.HasPrefix(e.Error(), tc.want[i]) {
					t.Errorf("error %d = %q, want it to start with %q", i, e.Error(), tc.want[i])
				}
			}
		})
	}
}
