package registry

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// The resources of a registry on the real clock, for the tests of hooks
// that do not read it; tests of times and ages take a registry on a fake
// clock from fixedNow. Tests only read these.
var (
	testRegistry = New(Config{})

	pods                       = testRegistry.Get("", "v1", "pods")
	namespaces                 = testRegistry.Get("", "v1", "namespaces")
	nodes                      = testRegistry.Get("", "v1", "nodes")
	coreEvents                 = testRegistry.Get("", "v1", "events")
	configMaps                 = testRegistry.Get("", "v1", "configmaps")
	services                   = testRegistry.Get("", "v1", "services")
	endpointSlices             = testRegistry.Get("discovery.k8s.io", "v1", "endpointslices")
	persistentVolumes          = testRegistry.Get("", "v1", "persistentvolumes")
	persistentVolumeClaims     = testRegistry.Get("", "v1", "persistentvolumeclaims")
	deployments                = testRegistry.Get("apps", "v1", "deployments")
	storageClasses             = testRegistry.Get("storage.k8s.io", "v1", "storageclasses")
	certificateSigningRequests = testRegistry.Get("certificates.k8s.io", "v1", "certificatesigningrequests")
	eventsV1                   = testRegistry.Get("events.k8s.io", "v1", "events")
)

// fixedNow returns a registry whose clock stands still, and its time.
func fixedNow(t *testing.T) (time.Time, *Registry) {
	t.Helper()
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	return now, New(Config{Clock: testingclock.NewFakePassiveClock(now)})
}
