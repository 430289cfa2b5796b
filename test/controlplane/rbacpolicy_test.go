package controlplane_test

import (
	"strings"
	"testing"
	"time"
)

// waitFor polls kubectl (as the admin) until its output holds every want.
func waitFor(t *testing.T, what string, args []string, wants ...string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, _, err := kubectl(t, args...)
		if err == nil && containsAll(out, wants) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: kubectl %s: err=%v, output %q lacks some of %q", what, strings.Join(args, " "), err, out, wants)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func containsAll(s string, wants []string) bool {
	for _, w := range wants {
		if !strings.Contains(s, w) {
			return false
		}
	}
	return true
}

// rules lists a cluster role's rules, one "resources verbs" a line.
func rules(role string) []string {
	return []string{"get", "clusterrole", role, "-o", `jsonpath={range .rules[*]}{.resources}{" "}{.verbs}{"\n"}{end}`}
}

// TestBootstrapRBACPolicy: the server reconciles upstream's bootstrap
// policy when it starts (the rbac/bootstrap-roles post-start hook), and
// the aggregation controller fills admin, edit and view.
func TestBootstrapRBACPolicy(t *testing.T) {
	if out := mustKubectl(t, "get", "--raw", "/readyz?verbose"); !strings.Contains(out, "[+]poststarthook/rbac/bootstrap-roles ok\n") {
		t.Errorf("/readyz?verbose:\n%s", out)
	}
	waitFor(t, "admin aggregated", rules("admin"), `"rolebindings"`, `"pods/exec"`, `"pods/log"`)
	waitFor(t, "view aggregated", rules("view"), `"pods/log"`)
	if out := mustKubectl(t, rules("view")...); strings.Contains(out, `"secrets"`) {
		t.Errorf("view grants secrets:\n%s", out)
	}
	meta := mustKubectl(t, "get", "clusterrole", "admin", "-o",
		`jsonpath={.metadata.labels.kubernetes\.io/bootstrapping} {.metadata.annotations.rbac\.authorization\.kubernetes\.io/autoupdate}`)
	if meta != "rbac-defaults true" {
		t.Errorf("clusterrole admin label and annotation: %q", meta)
	}
	if out := mustKubectl(t, "get", "clusterrolebinding", "cluster-admin", "-o", `jsonpath={.subjects[*].kind}/{.subjects[*].name}`); out != "Group/system:masters" {
		t.Errorf("clusterrolebinding cluster-admin subjects: %q", out)
	}
	if out := mustKubectl(t, "get", "clusterrolebinding", "system:node", "-o", `jsonpath={.subjects}`); out != "" {
		t.Errorf("clusterrolebinding system:node has subjects: %q", out)
	}
	mustKubectl(t, "-n", "kube-system", "get", "role", "extension-apiserver-authentication-reader")

	// A role labelled for view reaches view, and through it edit and admin.
	const widget = "e2e-widget-viewer"
	clusterScoped(t, "clusterrole", widget)
	mustKubectl(t, "create", "clusterrole", widget, "--verb=get", "--resource=configmaps", "--resource-name=e2e-widgets")
	mustKubectl(t, "label", "clusterrole", widget, "rbac.authorization.k8s.io/aggregate-to-view=true")
	for _, role := range []string{"view", "edit", "admin"} {
		waitFor(t, widget+" in "+role, []string{"get", "clusterrole", role, "-o", `jsonpath={.rules[*].resourceNames}`}, "e2e-widgets")
	}
}
