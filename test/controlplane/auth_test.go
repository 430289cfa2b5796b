package controlplane_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// serverAndCA reads the shared server's URL and CA from the admin kubeconfig.
func serverAndCA(t *testing.T) (string, []byte) {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(adminConfig)
	if err != nil {
		t.Fatal(err)
	}
	cluster := cfg.Clusters[cfg.Contexts[cfg.CurrentContext].Cluster]
	if cluster == nil || len(cluster.CertificateAuthorityData) == 0 {
		t.Fatalf("admin kubeconfig has no cluster with inline CA data: %+v", cfg.Clusters)
	}
	return cluster.Server, cluster.CertificateAuthorityData
}

func TestNoClientCertificate(t *testing.T) {
	url, ca := serverAndCA(t)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		t.Fatal("no CA certificate in the admin kubeconfig")
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Get(url + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET /api/v1/namespaces without credentials: %s %s", resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q, want application/json", ct)
	}
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("401 body is not a Status: %v: %s", err, body)
	}
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure ||
		st.Message != "Unauthorized" || st.Reason != metav1.StatusReasonUnauthorized || st.Code != 401 {
		t.Errorf("401 body: %s", body)
	}
}

func TestBogusToken(t *testing.T) {
	url, ca := serverAndCA(t)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: url, CertificateAuthorityData: ca}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "c"
	path := writeFile(t, "anonymous.kubeconfig", "")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	// With discovery cached (as after any earlier kubectl use), the 401 of
	// the list itself is reported with the Status message.
	mustKubectl(t, "api-resources")
	out, stderr, err := kubectlWith(t, path, "get", "pods", "--token", "bogus")
	if err == nil || out != "" || stderr != "error: You must be logged in to the server (Unauthorized)\n" {
		t.Errorf("get pods --token bogus: err=%v stdout=%q stderr=%q", err, out, stderr)
	}
	// With a cold discovery cache, the discovery request fails first;
	// kubectl then logs its retries and ends with client-go's message.
	out, stderr, err = kubectlWith(t, path, "get", "pods", "--token", "bogus", "--cache-dir", t.TempDir())
	want := "\nerror: You must be logged in to the server (the server has asked for the client to provide credentials)\n"
	if err == nil || out != "" || !strings.HasSuffix(stderr, want) {
		t.Errorf("get pods --token bogus (cold cache): err=%v stdout=%q stderr=%q", err, out, stderr)
	}
}
