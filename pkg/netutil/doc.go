// Package netutil holds the host network facts both the agent and the
// control plane need.
package netutil
