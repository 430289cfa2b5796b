package credentialprovider

import (
	"reflect"
	"testing"
)

func auth(u string) AuthConfig { return AuthConfig{Username: u, Password: u + "-pw"} }

func entry(u string) Entry { return Entry{Username: u, Password: u + "-pw"} }

func TestKeyringLookup(t *testing.T) {
	k := &Keyring{}
	k.Add(nil, Config{
		"https://index.docker.io/v1/":   entry("hub"),
		"quay.io":                       entry("quay"),
		"quay.io/org":                   entry("quay-org"),
		"http://quay.io/org/team/":      entry("quay-team"),
		"registry.example.com:5000":     entry("port"),
		"*.example.com":                 entry("wild"),
		"a.example.com":                 entry("a"),
		"https://gcr.io/v2/project":     entry("gcr"),
		"*.*.internal":                  entry("two-globs"),
		"%zz":                           entry("bad-url"),
		"localhost:5000/private":        entry("local"),
		"docker.io/someone":             entry("hub-user"),
		"registry.example.com:5000/x/y": entry("port-path"),
	})
	cases := []struct {
		repo string
		want []AuthConfig
	}{
		// Docker Hub: index.docker.io is the fallback for its repositories.
		{"docker.io/library/busybox", []AuthConfig{auth("hub")}},
		{"busybox", []AuthConfig{auth("hub")}},
		{"library/busybox", []AuthConfig{auth("hub")}},
		// A location that matches beats the fallback.
		{"docker.io/someone/app", []AuthConfig{auth("hub-user")}},
		// Longest path first, then its prefixes; scheme and trailing / go.
		{"quay.io/org/team/app", []AuthConfig{auth("quay-team"), auth("quay-org"), auth("quay")}},
		{"quay.io/org/app", []AuthConfig{auth("quay-org"), auth("quay")}},
		{"quay.io/other/app", []AuthConfig{auth("quay")}},
		// The path is a string prefix, as upstream compares it.
		{"quay.io/organisation/app", []AuthConfig{auth("quay-org"), auth("quay")}},
		// The port must be the same.
		{"registry.example.com:5000/team/app", []AuthConfig{auth("port")}},
		{"registry.example.com:5000/x/y/z", []AuthConfig{auth("port-path"), auth("port")}},
		{"registry.example.com/team/app", []AuthConfig{auth("wild")}},
		// A glob matches one label, and a named host comes before it.
		{"a.example.com/app", []AuthConfig{auth("a"), auth("wild")}},
		{"b.example.com/app", []AuthConfig{auth("wild")}},
		{"x.b.example.com/app", nil},
		{"example.com/app", nil},
		{"a.b.internal/app", []AuthConfig{auth("two-globs")}},
		// /v2/ is an API version, not a repository.
		{"gcr.io/project/img", []AuthConfig{auth("gcr")}},
		{"gcr.io/other/img", nil},
		{"localhost:5000/private/img", []AuthConfig{auth("local")}},
		{"localhost:5000/public/img", nil},
		{"ghcr.io/x", nil},
	}
	for _, tc := range cases {
		t.Run(tc.repo, func(t *testing.T) {
			if got := k.Lookup(tc.repo); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Lookup(%q) = %v, want %v", tc.repo, got, tc.want)
			}
		})
	}
}

func TestKeyringSameLocationKeepsAll(t *testing.T) {
	k := &Keyring{}
	k.Add(nil, Config{"r.io": entry("first")})
	k.Add(nil, Config{"https://r.io/": entry("second")})
	if got, want := k.Lookup("r.io/app"), []AuthConfig{auth("first"), auth("second")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Lookup = %v, want %v (every credential, in the order added)", got, want)
	}
}

func TestLookupUnion(t *testing.T) {
	pod, node := &Keyring{}, &Keyring{}
	pod.Add(nil, Config{"r.io": entry("pod")})
	node.Add(nil, Config{"r.io/app": entry("node")})
	// The pod's credentials come first even when the node's location is
	// more specific: the union asks one keyring after the other.
	if got, want := Lookup("r.io/app", pod, nil, node), []AuthConfig{auth("pod"), auth("node")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Lookup = %v, want %v", got, want)
	}
	var empty *Keyring
	if got := empty.Lookup("r.io/app"); got != nil {
		t.Errorf("nil keyring: %v", got)
	}
}

func TestRepoToPull(t *testing.T) {
	cases := map[string]string{
		"busybox":                              "docker.io/library/busybox",
		"busybox:1.36":                         "docker.io/library/busybox",
		"someone/app":                          "docker.io/someone/app",
		"docker.io/library/busybox":            "docker.io/library/busybox",
		"index.docker.io/library/busybox:1":    "docker.io/library/busybox",
		"127.0.0.1:5000/private/busybox:1":     "127.0.0.1:5000/private/busybox",
		"quay.io/org/app@sha256:" + sha256Zero: "quay.io/org/app",
	}
	for in, want := range cases {
		if got, err := RepoToPull(in); err != nil || got != want {
			t.Errorf("RepoToPull(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := RepoToPull("Not_A/Valid//Image"); err == nil {
		t.Error("invalid image: want an error")
	}
}

const sha256Zero = "0000000000000000000000000000000000000000000000000000000000000000"
