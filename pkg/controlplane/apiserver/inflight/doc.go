// Package inflight is kube-apiserver's max-in-flight filter
// (k8s.io/apiserver pkg/server/filters/maxinflight.go, the limiter
// upstream runs when API Priority and Fairness is off): at most
// MaxRequestsInFlight read-only (get, list) and
// MaxMutatingRequestsInFlight mutating requests are served at once; one
// more is answered 429 "Too many requests, please try again later." with
// Retry-After: 1. Long-running requests (watches, and the attach, exec,
// log, portforward and proxy subresources) are never counted, and members
// of system:masters are served even when the limit is reached.
//
// Wrap the API handler after authentication (the filter reads the user
// from the request context, package request) and before authorization, as
// upstream's handler chain does:
//
//	h := inflight.New(inflight.Config{MaxRequestsInFlight: 400, MaxMutatingRequestsInFlight: 200}, api)
package inflight
