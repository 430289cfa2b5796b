// Package allinone assembles `nodeagent server`: the bundled control
// plane (pkg/controlplane/server) and, unless Server.DisableAgent is set,
// this host's node agent (pkg/agent) joined to it with a node credential
// the server's CA mints for it. The agent starts once the API server is
// ready; both run in one errgroup, so the first one that fails stops the
// other, and the end of the context stops both.
//
// cmd/nodeagent only parses flags into a Config (Config.AddFlags) and
// calls Run.
package allinone
