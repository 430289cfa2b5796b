package apiserver

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// events.k8s.io/v1 Events live under the core events' keys and
// encryption config ("'*.events.k8s.io' objects are stored using the
// 'events' API group"); other resources under their own.
func TestStoredAs(t *testing.T) {
	reg := registry.New(registry.Config{})
	gr, conv := storedAs(reg.Get("events.k8s.io", "v1", "events"))
	if gr != v1.Resource("events") || conv == nil {
		t.Errorf("events.k8s.io/v1 events stored as %v (conversion %v), want the core events", gr, conv != nil)
	}
	if gr, conv := storedAs(reg.Get("", "v1", "events")); gr != v1.Resource("events") || conv != nil {
		t.Errorf("core events stored as %v (conversion %v)", gr, conv != nil)
	}
}
