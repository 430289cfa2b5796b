package endpoint

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func addresses(prefix string, n int) []v1.EndpointAddress {
	out := make([]v1.EndpointAddress, n)
	for i := range out {
		out[i].IP = fmt.Sprintf("%s.%d.%d", prefix, i/250, i%250)
	}
	return out
}

// TestTruncate: not-ready addresses go first; with too many ready ones,
// every subset keeps its share and the not-ready ones all go.
func TestTruncate(t *testing.T) {
	tests := []struct {
		name            string
		subsets         []v1.EndpointSubset
		cut             bool
		ready, notReady []int
	}{
		{"under capacity", []v1.EndpointSubset{{Addresses: addresses("10.0", 600), NotReadyAddresses: addresses("10.1", 400)}},
			false, []int{600}, []int{400}},
		{"not ready cut", []v1.EndpointSubset{{Addresses: addresses("10.0", 800), NotReadyAddresses: addresses("10.1", 300)}},
			true, []int{800}, []int{200}},
		{"ready cut by share", []v1.EndpointSubset{
			{Addresses: addresses("10.0", 900), NotReadyAddresses: addresses("10.1", 10)},
			{Addresses: addresses("10.2", 300)}},
			true, []int{750, 250}, []int{0, 0}},
	}
	for _, tc := range tests {
		ep := &v1.Endpoints{Subsets: tc.subsets}
		if got := truncate(ep); got != tc.cut {
			t.Errorf("%s: truncate = %v", tc.name, got)
		}
		for i, ss := range ep.Subsets {
			if len(ss.Addresses) != tc.ready[i] || len(ss.NotReadyAddresses) != tc.notReady[i] {
				t.Errorf("%s: subset %d has %d ready, %d not ready; want %d, %d", tc.name, i,
					len(ss.Addresses), len(ss.NotReadyAddresses), tc.ready[i], tc.notReady[i])
			}
		}
	}
}
