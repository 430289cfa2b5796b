package inflight

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		method, url string
		want        Kind
	}{
		{"GET", "/api/v1/namespaces/default/pods", ReadOnly},
		{"GET", "/api/v1/namespaces/default/pods/p", ReadOnly},
		{"HEAD", "/api/v1/namespaces/default/pods/p", ReadOnly},
		{"GET", "/api/v1/namespaces/default/pods?watch=true", LongRunning},
		{"GET", "/apis/apps/v1/deployments?watch=1", LongRunning},
		{"POST", "/api/v1/namespaces/default/configmaps", Mutating},
		{"PUT", "/api/v1/namespaces/default/configmaps/c", Mutating},
		{"PATCH", "/api/v1/nodes/n", Mutating},
		{"DELETE", "/api/v1/namespaces/default/pods/p", Mutating},
		{"DELETE", "/api/v1/namespaces/default/pods", Mutating},
		{"POST", "/api/v1/namespaces/default/pods/p/exec", LongRunning},
		{"GET", "/api/v1/namespaces/default/pods/p/exec", LongRunning},
		{"POST", "/api/v1/namespaces/default/pods/p/attach", LongRunning},
		{"POST", "/api/v1/namespaces/default/pods/p/portforward", LongRunning},
		{"GET", "/api/v1/namespaces/default/pods/p/log", LongRunning},
		{"GET", "/api/v1/nodes/n/proxy/metrics", LongRunning},
		{"GET", "/api/v1/namespaces/default/pods/p/status", ReadOnly},
		{"PATCH", "/api/v1/namespaces/default/pods/p/status", Mutating},
		// Non-resource requests: the verb is the method.
		{"GET", "/version", ReadOnly},
		{"GET", "/apis", ReadOnly},
		{"POST", "/version", Mutating},
		{"GET", "/debug/pprof/profile", LongRunning},
	} {
		r := httptest.NewRequest(tc.method, tc.url, nil)
		if got := Classify(r); got != tc.want {
			t.Errorf("%s %s: %v, want %v", tc.method, tc.url, got, tc.want)
		}
	}
}

// blocking serves requests until release is closed, reporting each start.
type blocking struct {
	started chan struct{}
	release chan struct{}
}

func newBlocking() *blocking {
	return &blocking{started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blocking) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b.started <- struct{}{}
	<-b.release
	w.WriteHeader(http.StatusOK)
}

func serve(h http.Handler, method, url string, u *request.User) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, url, nil)
	if u != nil {
		r = r.WithContext(request.WithUser(r.Context(), *u))
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

var (
	alice  = &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	master = &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
)

// hold starts n requests that stay in the handler until b.release closes.
func hold(t *testing.T, h http.Handler, b *blocking, n int, method, url string) *sync.WaitGroup {
	t.Helper()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if w := serve(h, method, url, alice); w.Code != http.StatusOK {
				t.Errorf("held %s %s: %d", method, url, w.Code)
			}
		})
		<-b.started
	}
	return &wg
}

func TestLimitsEachKindApart(t *testing.T) {
	b := newBlocking()
	h := New(Config{MaxRequestsInFlight: 2, MaxMutatingRequestsInFlight: 1}, b)
	wg := hold(t, h, b, 1, "POST", "/api/v1/namespaces/default/configmaps")

	w := serve(h, "PUT", "/api/v1/namespaces/default/configmaps/c", alice)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") != "1" ||
		strings.TrimSpace(w.Body.String()) != "Too many requests, please try again later." {
		t.Fatalf("mutating over the limit: %d Retry-After=%q %q", w.Code, w.Header().Get("Retry-After"), w.Body.String())
	}
	// Reads have their own slots.
	wg2 := hold(t, h, b, 2, "GET", "/api/v1/namespaces/default/configmaps")
	if w := serve(h, "GET", "/api/v1/namespaces/default/configmaps/c", alice); w.Code != http.StatusTooManyRequests {
		t.Fatalf("read over the limit: %d", w.Code)
	}
	close(b.release)
	wg.Wait()
	wg2.Wait()
	// Slots are given back.
	if w := serve(h, "PUT", "/api/v1/namespaces/default/configmaps/c", alice); w.Code != http.StatusOK {
		t.Fatalf("after release: %d", w.Code)
	}
}

func TestLongRunningAndMastersPass(t *testing.T) {
	b := newBlocking()
	h := New(Config{MaxRequestsInFlight: 1, MaxMutatingRequestsInFlight: 1}, b)
	wg := hold(t, h, b, 1, "GET", "/api/v1/pods")
	wg2 := hold(t, h, b, 1, "POST", "/api/v1/namespaces/default/configmaps")
	var passed sync.WaitGroup
	for _, req := range []struct {
		method, url string
		u           *request.User
	}{
		{"GET", "/api/v1/pods?watch=true", alice},
		{"POST", "/api/v1/namespaces/default/pods/p/exec", alice},
		{"GET", "/api/v1/namespaces/default/pods/p/log", alice},
		{"GET", "/api/v1/pods", master},
		{"DELETE", "/api/v1/namespaces/default/pods/p", master},
	} {
		passed.Go(func() {
			if w := serve(h, req.method, req.url, req.u); w.Code != http.StatusOK {
				t.Errorf("%s %s as %s: %d, want it served", req.method, req.url, req.u.Name, w.Code)
			}
		})
		<-b.started // reached the handler although the slots are taken
	}
	close(b.release)
	passed.Wait()
	wg.Wait()
	wg2.Wait()
}

func TestZeroIsUnlimited(t *testing.T) {
	next := http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	if h := New(Config{}, next); h == nil || h.(http.HandlerFunc) == nil {
		t.Fatal("New with no limits should return next")
	}
	b := newBlocking()
	h := New(Config{MaxRequestsInFlight: 1}, b)
	wg := hold(t, h, b, 3, "POST", "/api/v1/namespaces/default/configmaps") // mutating: unlimited
	close(b.release)
	wg.Wait()
}
