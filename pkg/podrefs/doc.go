// Package podrefs lists the API objects a pod refers to (secrets, config
// maps, and what a mirror pod may not name), where upstream's podutil
// visitors look. Admission (ServiceAccount, NodeRestriction) and the node
// authorizer share it; it imports nothing of the API server.
package podrefs
