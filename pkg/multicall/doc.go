// Package multicall makes the nodeagent binary also upstream kubectl, as
// k3s does: `nodeagent kubectl ...`, or the binary run under the name
// kubectl (a link to it), is k8s.io/kubectl's command with its arguments
// untouched. The main function dispatches here before it parses any of
// nodeagent's own flags.
//
// crictl is not bundled: sigs.k8s.io/cri-tools keeps its whole command in
// package main (cmd/crictl), which cannot be imported.
package multicall
