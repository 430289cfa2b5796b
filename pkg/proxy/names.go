package proxy

import (
	"crypto/sha256"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"sigs.k8s.io/knftables"
)

// Prefixes of the objects owned by one service port. Each is at most
// maxPrefixLen long, so that prefix and base fit nft's name limit.
const (
	serviceChainPrefix  = "service-"
	externalChainPrefix = "external-"
	endpointChainPrefix = "endpoint-"
	affinitySetPrefix   = "affinity-"

	maxPrefixLen = 16
	maxBaseLen   = knftables.NameLengthMax - maxPrefixLen
)

// hashedName prefixes name with a short hash of hashed and truncates it to
// maxBaseLen. The hash keeps truncated names unique and makes names that
// differ in one digit (two endpoints of a service) easy to tell apart; the
// readable rest is for people reading `nft list table`.
func hashedName(hashed, name string) string {
	sum := sha256.Sum256([]byte(hashed))
	s := base32.StdEncoding.EncodeToString(sum[:])[:8] + "-" + name
	if len(s) > maxBaseLen {
		s = s[:maxBaseLen-3] + "..."
	}
	return s
}

// portBase is "HASH-namespace/name/protocol/portname". Namespace, service
// and port names are DNS labels and protocols are letters, all legal in
// nft names; "/" separates them because none of them can contain it, and
// the fixed names of the table have none, which tells them apart.
func portBase(n ServicePortName) string {
	name := fmt.Sprintf("%s/%s/%s/%s", n.Namespace, n.Name, strings.ToLower(string(n.Protocol)), n.Port)
	return hashedName(name, name)
}

func endpointName(n ServicePortName, ep Endpoint) string {
	return fmt.Sprintf("%s/%s/%s/%s__%s/%d", n.Namespace, n.Name, strings.ToLower(string(n.Protocol)), n.Port,
		ep.IP, ep.Port)
}

func serviceChain(n ServicePortName) string  { return serviceChainPrefix + portBase(n) }
func externalChain(n ServicePortName) string { return externalChainPrefix + portBase(n) }

func endpointChain(n ServicePortName, ep Endpoint) string {
	name := endpointName(n, ep)
	return endpointChainPrefix + hashedName(name, name)
}

// affinitySet hashes the timeout in too: a set's timeout cannot be
// changed in place, so a new timeout makes a new set (and the old one is
// deleted as unused) rather than a failing redefinition.
func affinitySet(n ServicePortName, ep Endpoint, timeout time.Duration) string {
	name := endpointName(n, ep)
	return affinitySetPrefix + hashedName(fmt.Sprintf("%s@%d", name, int64(timeout.Seconds())), name)
}
