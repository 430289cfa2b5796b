package multicall

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestKubectlArgs(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		want []string
		ok   bool
	}{
		{argv: []string{"/usr/local/bin/nodeagent", "kubectl", "get", "ns", "--kubeconfig=x"}, want: []string{"get", "ns", "--kubeconfig=x"}, ok: true},
		{argv: []string{"nodeagent", "kubectl"}, want: []string{}, ok: true},
		{argv: []string{"_output/bin/kubectl", "version", "--client"}, want: []string{"version", "--client"}, ok: true},
		{argv: []string{"kubectl"}, want: []string{}, ok: true},
		{argv: []string{"nodeagent", "server", "kubectl"}},
		{argv: []string{"nodeagent", "--v=4", "kubectl"}},
		{argv: []string{"nodeagent"}},
		{argv: []string{"/bin/kubectl-foo", "get"}},
		{},
	} {
		got, ok := KubectlArgs(tc.argv)
		if ok != tc.ok || (ok && !slices.Equal(got, tc.want)) {
			t.Errorf("KubectlArgs(%q) = %q, %v; want %q, %v", tc.argv, got, ok, tc.want, tc.ok)
		}
	}
}

func TestDefaultKubeconfig(t *testing.T) {
	dir := t.TempDir()
	admin := filepath.Join(dir, "admin.kubeconfig")
	if err := os.WriteFile(admin, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.kubeconfig")
	for _, tc := range []struct {
		name  string
		args  []string
		env   string
		admin string
		want  string
	}{
		{name: "nothing named: the admin kubeconfig", args: []string{"get", "ns"}, admin: admin, want: admin},
		{name: "KUBECONFIG set", args: []string{"get", "ns"}, env: "/home/u/.kube/other", admin: admin},
		{name: "--kubeconfig path", args: []string{"--kubeconfig", "/x", "get", "ns"}, admin: admin},
		{name: "--kubeconfig=path", args: []string{"get", "ns", "--kubeconfig=/x"}, admin: admin},
		{name: "--kubeconfig of an exec'd command", args: []string{"exec", "p", "--", "kubectl", "--kubeconfig=/x"}, admin: admin, want: admin},
		{name: "no admin kubeconfig: kubectl's default", args: []string{"get", "ns"}, admin: missing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DefaultKubeconfig(tc.args, tc.env, tc.admin); got != tc.want {
				t.Errorf("DefaultKubeconfig = %q, want %q", got, tc.want)
			}
		})
	}
	if os.Geteuid() != 0 { // root reads every file
		if err := os.Chmod(admin, 0); err != nil {
			t.Fatal(err)
		}
		if got := DefaultKubeconfig(nil, "", admin); got != "" {
			t.Errorf("unreadable admin kubeconfig: %q, want kubectl's default", got)
		}
	}
}
