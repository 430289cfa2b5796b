package credentialprovider

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// AuthConfig is one credential to try for a pull.
type AuthConfig struct {
	Username string
	Password string
	// Source is the pull secret it came from; nil for the node's own.
	Source *SecretCoordinates
}

// SecretCoordinates name a pull secret, as the kubelet's pull records
// keep it.
type SecretCoordinates struct {
	UID       string `json:"uid"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Hash identifies the credential itself, whichever secret holds it, so a
// pod with the same credentials in another secret is recognised.
func (a AuthConfig) Hash() string {
	sum := sha256.Sum256([]byte(a.Username + "\x00" + a.Password))
	return hex.EncodeToString(sum[:])
}

// Keyring holds credentials by registry location ("host[:port][/path]",
// host labels may be globs). The zero value is empty and ready.
type Keyring struct {
	// index is every location, reverse-sorted so that a longer path is
	// tried before its prefix ("quay.io/org" before "quay.io") and a named
	// host before a glob ("a.example.com" before "*.example.com").
	index []string
	creds map[string][]AuthConfig
}

// Add indexes a config's entries, from the pull secret src (nil: the
// node's). Locations that do not parse as URLs are skipped, as the kubelet
// skips them.
func (k *Keyring) Add(src *SecretCoordinates, cfg Config) {
	if k.creds == nil {
		k.creds = map[string][]AuthConfig{}
	}
	locs := make([]string, 0, len(cfg))
	for loc := range cfg {
		locs = append(locs, loc)
	}
	sort.Strings(locs) // a stable order for entries that normalise alike
	for _, loc := range locs {
		key, ok := locationKey(loc)
		if !ok {
			continue
		}
		e := cfg[loc]
		k.creds[key] = append(k.creds[key], AuthConfig{Username: e.Username, Password: e.Password, Source: src})
		if !slices.Contains(k.index, key) {
			k.index = append(k.index, key)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(k.index)))
}

// locationKey strips a config location to host[:port][/path]: the scheme
// goes, and so does a leading /v1 or /v2 of the path (docker's API
// versions, not repositories).
func locationKey(loc string) (string, bool) {
	if !strings.HasPrefix(loc, "https://") && !strings.HasPrefix(loc, "http://") {
		loc = "https://" + loc
	}
	u, err := url.Parse(loc)
	if err != nil {
		return "", false
	}
	path := u.Path
	if strings.HasPrefix(path, "/v2/") || strings.HasPrefix(path, "/v1/") {
		path = path[3:]
	}
	if path == "" || path == "/" {
		return u.Host, true
	}
	return u.Host + path, true
}

// dockerHubKey is where Docker Hub's credentials are indexed
// ("https://index.docker.io/v1/" in config files).
const dockerHubKey = "index.docker.io"

// Lookup returns the credentials for a repository ("host[:port]/path",
// as RepoToPull gives it), the most specific location first; Docker Hub's
// credentials for a Docker Hub repository when no location matches.
func (k *Keyring) Lookup(repo string) []AuthConfig {
	if k == nil {
		return nil
	}
	var out []AuthConfig
	for _, key := range k.index {
		if locationMatches(key, repo) {
			out = append(out, k.creds[key]...)
		}
	}
	if len(out) == 0 && isDockerHub(repo) {
		out = append(out, k.creds[dockerHubKey]...)
	}
	return out
}

// Lookup asks each keyring in turn and returns all they hold for repo, in
// that order: the kubelet's union of a pod's secrets and the node's.
func Lookup(repo string, rings ...*Keyring) []AuthConfig {
	var out []AuthConfig
	for _, k := range rings {
		out = append(out, k.Lookup(repo)...)
	}
	return out
}

// locationMatches: same port, as many host labels each matching the
// glob's, and the glob's path a prefix of the target's.
func locationMatches(glob, target string) bool {
	g, err := url.Parse("https://" + glob)
	if err != nil {
		return false
	}
	t, err := url.Parse("https://" + target)
	if err != nil {
		return false
	}
	gLabels, gPort := splitHost(g.Host)
	tLabels, tPort := splitHost(t.Host)
	if gPort != tPort || len(gLabels) != len(tLabels) || !strings.HasPrefix(t.Path, g.Path) {
		return false
	}
	for i, label := range gLabels {
		if ok, err := filepath.Match(label, tLabels[i]); err != nil || !ok {
			return false
		}
	}
	return true
}

func splitHost(hostport string) (labels []string, port string) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		host, port = hostport, ""
	}
	return strings.Split(host, "."), port
}

// isDockerHub: the repository is pulled from Docker Hub, by docker's rule
// that a first component without "." or ":" is a user, not a host.
func isDockerHub(repo string) bool {
	first, _, found := strings.Cut(repo, "/")
	switch {
	case first == "":
		return false
	case !found:
		return true
	case first == "docker.io" || first == "index.docker.io":
		return true
	}
	return !strings.ContainsAny(first, ".:")
}
