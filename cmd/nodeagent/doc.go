// Command nodeagent is the node agent (kubelet role, `nodeagent agent`)
// and the bundled control plane with this host's agent (`nodeagent
// server`, pkg/allinone). It is also upstream kubectl (`nodeagent
// kubectl`, or run as kubectl: pkg/multicall). This package holds cobra
// wiring only.
package main
