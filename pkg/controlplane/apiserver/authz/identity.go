package authz

import (
	"slices"
	"strings"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// Groups and names with a fixed meaning, as upstream.
const (
	MastersGroup    = "system:masters"    // all-powerful
	NodesGroup      = "system:nodes"      // node agents: see NodeAuthorizer
	MonitoringGroup = "system:monitoring" // reads /metrics (the bootstrap binding)
	NodeUserPrefix  = "system:node:"      // a node's user name: the prefix and the node's name
)

// IsMaster reports whether u is in system:masters.
func IsMaster(u request.User) bool { return HasGroup(u, MastersGroup) }

// HasGroup reports whether u is in group g.
func HasGroup(u request.User, g string) bool { return slices.Contains(u.Groups, g) }

// NodeName returns the node a node credential belongs to.
func NodeName(u request.User) (string, bool) {
	if !HasGroup(u, NodesGroup) || !strings.HasPrefix(u.Name, NodeUserPrefix) {
		return "", false
	}
	name := strings.TrimPrefix(u.Name, NodeUserPrefix)
	return name, name != ""
}
