// Package credentialprovider is the kubelet's registry credential keyring
// (pkg/credentialprovider upstream): docker config entries (the "auth"
// field decoded to a user and password), a Keyring indexed by registry
// location with upstream's matching (scheme stripped, host and port,
// /v1/ and /v2/ dropped, path prefixes, "*" in host labels, the most
// specific location first, Docker Hub's index.docker.io as the fallback
// for Docker Hub images), the image pull secrets of type
// kubernetes.io/dockerconfigjson and kubernetes.io/dockercfg turned into
// a keyring (FromSecrets), and Lookup over several keyrings in order: a
// pod's secrets before the node's config.json, as the kubelet unions them.
// Each credential found is to be tried in turn until a pull succeeds.
package credentialprovider
