package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func TestParseTokens(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]request.User
		wantErr bool
	}{
		{name: "empty", in: "", want: map[string]request.User{}},
		{name: "no groups", in: "tok,bob,42\n", want: map[string]request.User{"tok": {Name: "bob", UID: "42"}}},
		{name: "groups", in: "tok,alice,1,\"a, b\"\n", want: map[string]request.User{"tok": {Name: "alice", UID: "1", Groups: []string{"a", "b"}}}},
		{name: "two lines", in: "t1,u1,1\nt2,u2,2,g\n", want: map[string]request.User{
			"t1": {Name: "u1", UID: "1"}, "t2": {Name: "u2", UID: "2", Groups: []string{"g"}}}},
		{name: "too few fields", in: "tok,bob\n", wantErr: true},
		{name: "empty token", in: ",bob,1\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseTokens(strings.NewReader(tt.in), "tokens.csv")
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for tok, u := range tt.want {
				if g := got[tok]; g.Name != u.Name || g.UID != u.UID || !slices.Equal(g.Groups, u.Groups) {
					t.Errorf("%s: got %+v, want %+v", tok, g, u)
				}
			}
		})
	}
}

func TestAuthenticate(t *testing.T) {
	var seen *request.User
	var sawAuthHeader bool
	h := authenticate(tokenUsers{"tok": {Name: "alice", Groups: []string{"devs"}}},
		http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, ok := request.UserFrom(r.Context())
			if ok {
				seen = &u
			}
			sawAuthHeader = r.Header.Get("Authorization") != ""
		}))
	cert := &x509.Certificate{Subject: pkix.Name{CommonName: "kubernetes-admin", Organization: []string{"system:masters"}}}

	tests := []struct {
		name       string
		verified   bool
		header     string
		wantCode   int
		wantUser   string
		wantGroups []string
	}{
		{name: "client cert", verified: true, wantCode: 200, wantUser: "kubernetes-admin",
			wantGroups: []string{"system:masters", "system:authenticated"}},
		{name: "cert wins over token", verified: true, header: "Bearer tok", wantCode: 200, wantUser: "kubernetes-admin",
			wantGroups: []string{"system:masters", "system:authenticated"}},
		{name: "token", header: "Bearer tok", wantCode: 200, wantUser: "alice",
			wantGroups: []string{"devs", "system:authenticated"}},
		{name: "token scheme case", header: "bearer tok", wantCode: 200, wantUser: "alice",
			wantGroups: []string{"devs", "system:authenticated"}},
		{name: "wrong token", header: "Bearer nope", wantCode: 401},
		{name: "basic auth", header: "Basic dTpw", wantCode: 401},
		{name: "anonymous", wantCode: 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen, sawAuthHeader = nil, false
			req := httptest.NewRequest(http.MethodGet, "https://x/api", nil)
			req.TLS = &tls.ConnectionState{}
			if tt.verified {
				req.TLS.VerifiedChains = [][]*x509.Certificate{{cert}}
			}
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.wantCode {
				t.Fatalf("code = %d, want %d", rec.Code, tt.wantCode)
			}
			if tt.wantCode == 401 {
				if seen != nil {
					t.Fatal("handler reached without authentication")
				}
				if strings.TrimSpace(rec.Body.String()) != unauthorizedBody {
					t.Errorf("body = %s", rec.Body.String())
				}
				if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
					t.Errorf("content type %q", ct)
				}
				return
			}
			if seen == nil || seen.Name != tt.wantUser || !slices.Equal(seen.Groups, tt.wantGroups) {
				t.Fatalf("user = %+v, want %s %v", seen, tt.wantUser, tt.wantGroups)
			}
			if !tt.verified && sawAuthHeader {
				t.Error("bearer token passed on to the API server")
			}
		})
	}
}

func TestReadyzGates(t *testing.T) {
	var etcdErr error
	h := &healthChecks{etcdHealth: func(context.Context) error { return etcdErr }}
	mux := http.NewServeMux()
	h.register(mux)
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	if code, _ := get("/readyz"); code != http.StatusServiceUnavailable {
		t.Errorf("/readyz before start = %d, want 503", code)
	}
	if code, body := get("/livez"); code != 200 || body != "ok" {
		t.Errorf("/livez = %d %q", code, body)
	}
	h.ready.Store(true)
	if code, body := get("/readyz"); code != 200 || body != "ok" {
		t.Errorf("/readyz when ready = %d %q", code, body)
	}
	if code, body := get("/readyz?verbose"); code != 200 || !strings.Contains(body, "[+]etcd ok") {
		t.Errorf("/readyz?verbose = %d %q", code, body)
	}
	etcdErr = errors.New("down")
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "[-]etcd failed") {
		t.Errorf("/readyz with etcd down = %d %q", code, body)
	}
}
