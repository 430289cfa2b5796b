package podworker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEtcHostsContent(t *testing.T) {
	const node = "127.0.0.1\tlocalhost\n192.0.2.5\tnode1\n"
	const podHeader = "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	aliases := []v1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"foo", "foo.example"}}, {IP: "fd00::9", Hostnames: []string{"bar"}}}
	const aliasSection = "\n# Entries added by HostAliases.\n10.9.9.9\tfoo\tfoo.example\nfd00::9\tbar\n"
	cases := []struct {
		name        string
		hostNetwork bool
		subdomain   string
		aliases     []v1.HostAlias
		want        string
	}{
		{"host network: the node's file", true, "", nil, "# Kubernetes-managed hosts file (host network).\n" + node},
		{"host network with host aliases", true, "", aliases, "# Kubernetes-managed hosts file (host network).\n" + node + aliasSection},
		{"pod network", false, "", nil, podHeader + "10.0.0.7\tweb\n"},
		{"pod network, subdomain and host aliases", false, "sub", aliases,
			podHeader + "10.0.0.7\tweb.sub.ns1.svc.cluster.local\tweb\n" + aliasSection},
		{"hostnameOverride: that name alone, whatever the subdomain", false, "sub", nil, podHeader + "10.0.0.7\twww.example.com\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns1"},
				Spec: v1.PodSpec{HostNetwork: tc.hostNetwork, Subdomain: tc.subdomain, HostAliases: tc.aliases}}
			if strings.HasPrefix(tc.name, "hostnameOverride") {
				override := "www.example.com"
				pod.Spec.HostnameOverride = &override
			}
			if got := string(etcHostsContent(pod, []string{"10.0.0.7"}, "cluster.local", []byte(node))); got != tc.want {
				t.Errorf("hosts file\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

func TestWriteEtcHostsReadsTheNodesFile(t *testing.T) {
	dir := t.TempDir()
	nodeHosts := filepath.Join(dir, "node-hosts")
	if err := os.WriteFile(nodeHosts, []byte("192.0.2.5\tnode1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pod := &v1.Pod{Spec: v1.PodSpec{HostNetwork: true, HostAliases: []v1.HostAlias{{IP: "10.9.9.9", Hostnames: []string{"foo"}}}}}
	if err := writeEtcHosts(filepath.Join(dir, "pod"), pod, nil, "", nodeHosts); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "pod", "etc-hosts"))
	want := "# Kubernetes-managed hosts file (host network).\n192.0.2.5\tnode1\n\n# Entries added by HostAliases.\n10.9.9.9\tfoo\n"
	if err != nil || string(got) != want {
		t.Errorf("etc-hosts = %q, %v; want %q", got, err, want)
	}
	if err := writeEtcHosts(filepath.Join(dir, "pod2"), pod, nil, "", filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing node hosts file should fail the write")
	}
}
