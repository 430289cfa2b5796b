// Package allocator chooses new services' cluster IPs and node ports from
// those the stored services hold, as kube-apiserver's ipallocator and
// portallocator do: cluster IPs from above the static band first
// (KEP-3070), then from inside it; node ports from the bottom of the
// range. It keeps no state: the caller passes the services in use and
// serializes allocations (the registry's services hook holds a lock until
// the new service is stored).
package allocator
