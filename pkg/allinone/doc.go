// Package allinone assembles `nodeagent server`: the bundled control
// plane (pkg/controlplane/server) and, unless Server.DisableAgent is set,
// this host's node agent joined to it with a node credential the
// server's CA mints for it. The agent starts once the API server is
// ready, as a child process (`nodeagent agent`, supervise.go) rather than
// in-process: it lowers its own oom_score_adj to the kubelet's -999, and
// the control plane keeps the score it was started with, so that a
// control plane that grows is not what the kernel kills last. The server
// restarts the agent with back-off when it exits and stops it with
// SIGTERM when its context ends; a control plane failure stops both.
//
// cmd/nodeagent only parses flags into a Config (Config.AddFlags) and
// calls Run.
package allinone
