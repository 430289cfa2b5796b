package realcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestNodeAPIThroughProxy: the node API through kube-apiserver's nodes/proxy
// subresource (the API server reaches the agent at the Node's
// daemonEndpoints port with its kubelet client certificate, which the
// agent authenticates against the cluster CA and authorizes with a
// SubjectAccessReview): /healthz, /metrics, /stats/summary. kubectl top
// node needs the metrics.k8s.io API (metrics-server), which this cluster
// does not serve: kubectl says so.
func TestNodeAPIThroughProxy(t *testing.T) {
	base := "/api/v1/nodes/" + nodeName + "/proxy"
	if got := kctl.Must(t, "get", "--raw", base+"/healthz"); strings.TrimSpace(got) != "ok" {
		t.Errorf("proxy/healthz = %q, want ok", got)
	}
	if got := kctl.Must(t, "get", "--raw", base+"/metrics"); !strings.Contains(got, `kubelet_node_name{node="`+nodeName+`"} 1`) {
		t.Errorf("proxy/metrics lacks kubelet_node_name for %s:\n%.2000s", nodeName, got)
	}
	// The fields of the kubelet's stats/v1alpha1 Summary checked here.
	var summary struct {
		Node struct {
			NodeName string          `json:"nodeName"`
			CPU      json.RawMessage `json:"cpu"`
			Memory   json.RawMessage `json:"memory"`
		} `json:"node"`
	}
	if err := json.Unmarshal([]byte(kctl.Must(t, "get", "--raw", base+"/stats/summary")), &summary); err != nil {
		t.Fatalf("proxy/stats/summary: %v", err)
	}
	if summary.Node.NodeName != nodeName || summary.Node.CPU == nil || summary.Node.Memory == nil {
		t.Errorf("summary node %+v: want %s with CPU and memory", summary.Node, nodeName)
	}
	_, stderr, err := kctl.Run(t, "top", "node")
	if err == nil || !strings.Contains(stderr, "Metrics API not available") {
		t.Errorf("kubectl top node without metrics-server: err %v, stderr %q; want kubectl's Metrics API not available", err, stderr)
	}
}

// TestNodeAPIAuthorization: a ServiceAccount token on the agent's own
// port. The agent authenticates it with a TokenReview and asks the real
// API's SubjectAccessReview for nodes/<subresource>: without a role the
// request is refused (403, naming the user and the attributes, as the
// kubelet's message); once bound to a ClusterRole granting nodes/proxy,
// the same request passes. Through kube-apiserver the same ServiceAccount
// is refused by the API server itself (nodes/proxy is authorized there
// first).
func TestNodeAPIAuthorization(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const sa = "node-reader"
	user := "system:serviceaccount:default:" + sa
	deleteOnCleanup(t, "serviceaccount/"+sa, "clusterrole/"+sa, "clusterrolebinding/"+sa)
	if _, err := cl.admin.CoreV1().ServiceAccounts("default").Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cl.admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, sa, &authnv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := tr.Status.Token

	agentURL := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(agent.SecurePort))
	// The agent's serving certificate may still be self-signed: its
	// identity is not what this test is about.
	agentClient := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	code, body := get(t, agentClient, agentURL+"/pods", token)
	if code != http.StatusForbidden || !strings.Contains(body, "Forbidden (user="+user+", verb=get, resource=nodes,") {
		t.Errorf("agent /pods without a role: %d %q, want 403 Forbidden naming %s", code, body, user)
	}
	code, body = get(t, agentClient, agentURL+"/stats/summary", token)
	if code != http.StatusForbidden || !strings.Contains(body, "subresource") || !strings.Contains(body, "stats") {
		t.Errorf("agent /stats/summary without a role: %d %q, want 403 on nodes/stats", code, body)
	}
	// Through the API server: refused there.
	apiClient := apiServerClient(t)
	code, body = get(t, apiClient, cl.url+"/api/v1/nodes/"+nodeName+"/proxy/pods", token)
	if code != http.StatusForbidden || !strings.Contains(body, `cannot get resource \"nodes/proxy\"`) {
		t.Errorf("API nodes/proxy without a role: %d %q, want kube-apiserver's 403", code, body)
	}

	if _, err := cl.admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes/proxy", "nodes/stats"}, Verbs: []string{"get"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: sa},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: "default"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The agent caches unauthorized answers (authorization.webhook.
	// cacheUnauthorizedTTL, 30s); wait them out.
	framework.WaitFor(t, apiTimeout, "the agent to allow the bound ServiceAccount", func() (bool, error) {
		code, body := get(t, agentClient, agentURL+"/pods", token)
		if code != http.StatusOK || !strings.Contains(body, `"kind":"PodList"`) {
			return false, fmt.Errorf("agent /pods: %d %.300q", code, body)
		}
		code, body = get(t, apiClient, cl.url+"/api/v1/nodes/"+nodeName+"/proxy/healthz", token)
		if code != http.StatusOK || strings.TrimSpace(body) != "ok" {
			return false, fmt.Errorf("API proxy/healthz: %d %.300q", code, body)
		}
		return true, nil
	})
}

// apiServerClient is an HTTP client that trusts the cluster CA and
// presents no client certificate.
func apiServerClient(t *testing.T) *http.Client {
	t.Helper()
	caPEM, err := os.ReadFile(cl.pkiPath("ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// get GETs url with the bearer token and returns the status and body.
func get(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
