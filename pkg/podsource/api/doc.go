// Package api is the agent's API pod source: an informer on the pods bound
// to the node (spec.nodeName), reported as full podsource.APIPods
// snapshots. It splits off the mirror pods, which podsource.Merger hands to
// the mirror pod manager rather than to the pod manager, and marks the rest
// with config.source "api", by which the status manager tells them from
// static pods. It starts once the Node is registered (see
// apiclient.API.Run).
package api
