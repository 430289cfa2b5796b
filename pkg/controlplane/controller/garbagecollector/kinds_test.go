package garbagecollector

import (
	"testing"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

// TestEventsAreIgnored: as upstream's default GCIgnoredResources, the
// collector neither watches nor deletes events.
func TestEventsAreIgnored(t *testing.T) {
	cs := fake.NewClientset()
	for _, k := range kinds(cs, informers.NewSharedInformerFactory(cs, 0)) {
		if k.kind == "Event" {
			t.Errorf("the collector watches %s %s", k.apiVersion, k.kind)
		}
	}
}
