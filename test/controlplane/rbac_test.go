package controlplane_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// tokenKubeconfig writes a kubeconfig for the shared server that
// authenticates with a token of the namespace's service account name.
func tokenKubeconfig(t *testing.T, ns, name string) string {
	t.Helper()
	mustKubectl(t, "-n", ns, "create", "serviceaccount", name)
	return tokenKubeconfigFor(t, ns, name, strings.TrimSpace(mustKubectl(t, "-n", ns, "create", "token", name)))
}

// tokenKubeconfigFor writes a kubeconfig for the shared server that
// authenticates with token, in the namespace.
func tokenKubeconfigFor(t *testing.T, ns, name, token string) string {
	t.Helper()
	url, ca := serverAndCA(t)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u", Namespace: ns}
	cfg.CurrentContext = "c"
	path := writeFile(t, name+".kubeconfig", "")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// waitAs polls kubectl as the kubeconfig's user until ok accepts the
// outcome: bindings reach the authorizer through the watch cache.
func waitAs(t *testing.T, kubeconfig, what string, ok func(stdout, stderr string, err error) bool, args ...string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, stderr, err := kubectlWith(t, kubeconfig, args...)
		if ok(out, stderr, err) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: last outcome err=%v stdout=%q stderr=%q", what, err, out, stderr)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func succeeds(_, _ string, err error) bool { return err == nil }

func forbidden(want string) func(string, string, error) bool {
	return func(_, stderr string, err error) bool { return err != nil && stderr == want }
}

// clusterScoped deletes a cluster-scoped object when the test ends.
func clusterScoped(t *testing.T, kind, name string) {
	t.Cleanup(func() {
		if _, stderr, err := kubectl(t, "delete", kind, name, "--ignore-not-found"); err != nil {
			t.Errorf("deleting %s %s: %v\n%s", kind, name, err, stderr)
		}
	})
}

// TestRBAC: a service account may list pods only once bound to a role
// that allows it, where the binding reaches, and no more once the
// binding is gone.
func TestRBAC(t *testing.T) {
	ns := namespace(t)
	sa := tokenKubeconfig(t, ns, "reader")
	user := "system:serviceaccount:" + ns + ":reader"
	refusedIn := func(namespace string) string {
		return `Error from server (Forbidden): pods is forbidden: User "` + user + `" cannot list resource "pods" in API group "" in the namespace "` + namespace + `"` + "\n"
	}
	refusedEverywhere := `Error from server (Forbidden): pods is forbidden: User "` + user + `" cannot list resource "pods" in API group "" at the cluster scope` + "\n"
	_, stderr, err := kubectlWith(t, sa, "get", "pods")
	if err == nil || stderr != refusedIn(ns) {
		t.Fatalf("unbound service account lists pods: err=%v stderr=%q want %q", err, stderr, refusedIn(ns))
	}

	// A RoleBinding to a Role: in its namespace only.
	if out := mustKubectl(t, "-n", ns, "create", "role", "pod-reader", "--verb=get,list,watch", "--resource=pods"); out != "role.rbac.authorization.k8s.io/pod-reader created\n" {
		t.Errorf("create role: %q", out)
	}
	if out := mustKubectl(t, "-n", ns, "create", "rolebinding", "read-pods", "--role=pod-reader", "--serviceaccount="+ns+":reader"); out != "rolebinding.rbac.authorization.k8s.io/read-pods created\n" {
		t.Errorf("create rolebinding: %q", out)
	}
	waitAs(t, sa, "pods listed after the RoleBinding", succeeds, "get", "pods")
	if _, stderr, err := kubectlWith(t, sa, "-n", "default", "get", "pods"); err == nil || stderr != refusedIn("default") {
		t.Errorf("a RoleBinding reaches beyond its namespace: err=%v stderr=%q", err, stderr)
	}
	checkReviews(t, sa, ns, user)

	// A ClusterRoleBinding to a view-like ClusterRole: everywhere.
	view := ns + "-view"
	clusterScoped(t, "clusterrole", view)
	clusterScoped(t, "clusterrolebinding", view)
	mustKubectl(t, "create", "clusterrole", view, "--verb=get,list,watch", "--resource=pods,configmaps,services")
	mustKubectl(t, "create", "clusterrolebinding", view, "--clusterrole="+view, "--serviceaccount="+ns+":reader")
	waitAs(t, sa, "pods listed everywhere after the ClusterRoleBinding", succeeds, "get", "pods", "-A")
	if _, stderr, err := kubectlWith(t, sa, "-n", "default", "get", "configmaps"); err != nil {
		t.Errorf("configmaps in default: %v %s", err, stderr)
	}

	// Revoked: refused again once the cache has seen the deletion.
	mustKubectl(t, "delete", "clusterrolebinding", view)
	waitAs(t, sa, "refused after the ClusterRoleBinding is gone", forbidden(refusedEverywhere), "get", "pods", "-A")
	if _, _, err := kubectlWith(t, sa, "get", "pods"); err != nil {
		t.Errorf("the RoleBinding still grants its namespace: %v", err)
	}

	checkRBACPrinting(t, ns, view)
}

// checkReviews: SelfSubjectAccessReviews (kubectl auth can-i) and
// SubjectAccessReviews get the answers the requests get.
func checkReviews(t *testing.T, sa, ns, user string) {
	t.Helper()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"auth", "can-i", "list", "pods"}, "yes\n"},
		{[]string{"auth", "can-i", "delete", "pods"}, "no\n"},
		{[]string{"-n", "default", "auth", "can-i", "list", "pods"}, "no\n"},
	} {
		if out, _, _ := kubectlWith(t, sa, tc.args...); out != tc.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(tc.args, " "), out, tc.want)
		}
	}
	sar := writeFile(t, "sar.yaml", `apiVersion: authorization.k8s.io/v1
kind: SubjectAccessReview
spec:
  user: `+user+`
  groups: [system:serviceaccounts, system:serviceaccounts:`+ns+`, system:authenticated]
  resourceAttributes: {namespace: `+ns+`, verb: watch, resource: pods}
`)
	// Validation off: the review types are not in the OpenAPI documents.
	out := mustKubectl(t, "create", "--validate=false", "-f", sar, "-o", "jsonpath={.status.allowed} {.status.reason}")
	if want := `true RBAC: allowed by RoleBinding "read-pods/` + ns + `" of Role "pod-reader" to ServiceAccount "reader/` + ns + `"`; out != want {
		t.Errorf("SubjectAccessReview: %q, want %q", out, want)
	}
}

// checkRBACPrinting: kubectl get (upstream's columns) and describe.
func checkRBACPrinting(t *testing.T, ns, view string) {
	t.Helper()
	r := rows(mustKubectl(t, "-n", ns, "get", "role"))
	checkRow(t, "role header", r[0], []string{"NAME", "CREATED AT"})
	if len(r) != 2 || r[1][0] != "pod-reader" || !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(r[1][1]) {
		t.Errorf("kubectl get role: %q", r)
	}
	r = rows(mustKubectl(t, "-n", ns, "get", "rolebinding", "-o", "wide"))
	checkRow(t, "rolebinding header", r[0], []string{"NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"})
	// Empty USERS and GROUPS cells leave the service account last.
	checkRow(t, "rolebinding row", r[1], []string{"read-pods", "Role/pod-reader", "*", ns + "/reader"})
	r = rows(mustKubectl(t, "get", "clusterrole", view))
	checkRow(t, "clusterrole header", r[0], []string{"NAME", "CREATED AT"})
	api := rows(mustKubectl(t, "api-resources", "--api-group=rbac.authorization.k8s.io"))
	for i, want := range [][]string{
		{"NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"},
		{"clusterrolebindings", "rbac.authorization.k8s.io/v1", "false", "ClusterRoleBinding"},
		{"clusterroles", "rbac.authorization.k8s.io/v1", "false", "ClusterRole"},
		{"rolebindings", "rbac.authorization.k8s.io/v1", "true", "RoleBinding"},
		{"roles", "rbac.authorization.k8s.io/v1", "true", "Role"},
	} {
		if i < len(api) {
			checkRow(t, "api-resources", api[i], want)
		}
	}
	if out := mustKubectl(t, "explain", "clusterrole.aggregationRule"); !strings.HasPrefix(out, "GROUP:      rbac.authorization.k8s.io\nKIND:       ClusterRole\n") {
		t.Errorf("explain clusterrole.aggregationRule: %q", out)
	}
	agg := ns + "-aggregated"
	clusterScoped(t, "clusterrole", agg)
	manifest := writeFile(t, "agg.yaml", `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: `+agg+`
aggregationRule:
  clusterRoleSelectors:
  - matchLabels: {e2e-aggregate: "`+ns+`"}
rules: []
`)
	if out := mustKubectl(t, "apply", "-f", manifest); out != "clusterrole.rbac.authorization.k8s.io/"+agg+" created\n" {
		t.Errorf("apply an aggregated ClusterRole: %q", out)
	}
	desc := mustKubectl(t, "-n", ns, "describe", "role", "pod-reader")
	for _, want := range []string{"Name:         pod-reader", "PolicyRule:", "pods       []                 []              [get list watch]"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe role lacks %q:\n%s", want, desc)
		}
	}
	desc = mustKubectl(t, "-n", ns, "describe", "rolebinding", "read-pods")
	for _, want := range []string{"Role:\n  Kind:  Role\n  Name:  pod-reader", "ServiceAccount  reader  " + ns} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe rolebinding lacks %q:\n%s", want, desc)
		}
	}
	_, stderr, err := kubectl(t, "-n", ns, "patch", "rolebinding", "read-pods", "--type=merge", "-p", `{"roleRef":{"name":"other"}}`)
	if err == nil || !strings.Contains(stderr, `roleRef: Invalid value: `) || !strings.Contains(stderr, `: cannot change roleRef`) {
		t.Errorf("roleRef change: err=%v stderr=%q", err, stderr)
	}
}

// TestRBACEscalation: a user may create a role only with rights it holds,
// unless it may escalate roles; `kubectl auth can-i --list` and `kubectl
// auth whoami` as the service account.
func TestRBACEscalation(t *testing.T) {
	ns := namespace(t)
	sa := tokenKubeconfig(t, ns, "maker")
	user := "system:serviceaccount:" + ns + ":maker"
	mustKubectl(t, "-n", ns, "create", "role", "role-maker", "--verb=create,get", "--resource=roles,pods")
	mustKubectl(t, "-n", ns, "create", "rolebinding", "role-maker", "--role=role-maker", "--serviceaccount="+ns+":maker")
	waitAs(t, sa, "pods readable after the binding", succeeds, "get", "pod", "none", "--ignore-not-found")

	// Within its rights: allowed.
	if _, stderr, err := kubectlWith(t, sa, "create", "role", "small", "--verb=get", "--resource=pods"); err != nil {
		t.Errorf("a role within the user's rights: %v %s", err, stderr)
	}
	want := `Error from server (Forbidden): roles.rbac.authorization.k8s.io "big" is forbidden: user "` + user +
		`" (groups=["system:serviceaccounts" "system:serviceaccounts:` + ns + `" "system:authenticated"]) is attempting to grant RBAC permissions not currently held:` + "\n" +
		`{APIGroups:[""], Resources:["secrets"], Verbs:["get" "delete"]}` + "\n"
	_, stderr, err := kubectlWith(t, sa, "create", "role", "big", "--verb=get,delete", "--resource=secrets")
	if err == nil || stderr != want {
		t.Errorf("escalating role: err=%v\nstderr %q\nwant   %q", err, stderr, want)
	}

	// With escalate on roles (a RoleBinding to a ClusterRole): allowed.
	esc := ns + "-escalate"
	clusterScoped(t, "clusterrole", esc)
	mustKubectl(t, "create", "clusterrole", esc, "--verb=escalate", "--resource=roles.rbac.authorization.k8s.io")
	mustKubectl(t, "-n", ns, "create", "rolebinding", "escalate", "--clusterrole="+esc, "--serviceaccount="+ns+":maker")
	waitAs(t, sa, "role created with escalate", succeeds, "create", "role", "big", "--verb=get,delete", "--resource=secrets")

	list := mustKubectlWith(t, sa, "auth", "can-i", "--list")
	for _, want := range []string{
		`^Resources\s+Non-Resource URLs\s+Resource Names\s+Verbs\n`,
		`(?m)^pods\s+\[\]\s+\[\]\s+\[create get\]$`,
		// kubectl merges the rules on one resource.
		`(?m)^roles.rbac.authorization.k8s.io\s+\[\]\s+\[\]\s+\[escalate create get\]$`,
		`(?m)^selfsubjectreviews.authentication.k8s.io\s+\[\]\s+\[\]\s+\[create\]$`,
		`(?m)^selfsubjectaccessreviews.authorization.k8s.io\s+\[\]\s+\[\]\s+\[create\]$`,
	} {
		if !regexp.MustCompile(want).MatchString(list) {
			t.Errorf("auth can-i --list lacks %s:\n%s", want, list)
		}
	}
	// The token's UID and extra (its credential ID) too, as upstream.
	uid := mustKubectl(t, "-n", ns, "get", "serviceaccount", "maker", "-o", "jsonpath={.metadata.uid}")
	who := rows(mustKubectlWith(t, sa, "auth", "whoami"))
	if len(who) != 5 {
		t.Fatalf("auth whoami: %q", who)
	}
	checkRow(t, "whoami header", who[0], []string{"ATTRIBUTE", "VALUE"})
	checkRow(t, "whoami user", who[1], []string{"Username", user})
	checkRow(t, "whoami uid", who[2], []string{"UID", uid})
	checkRow(t, "whoami groups", who[3], []string{"Groups", "[system:serviceaccounts system:serviceaccounts:" + ns + " system:authenticated]"})
	if len(who[4]) != 2 || who[4][0] != "Extra: authentication.kubernetes.io/credential-id" || !strings.HasPrefix(who[4][1], "[JTI=") {
		t.Errorf("whoami extra: %q", who[4])
	}
}

func mustKubectlWith(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	out, stderr, err := kubectlWith(t, kubeconfig, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}
