package volume

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClock is a settable clock shared by the cache and the fake API.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time       { return c.t }
func (c *fakeClock) step(d time.Duration) { c.t = c.t.Add(d) }
func noJitter() time.Duration             { return 0 }

func tokenReq(exp int64, uid types.UID) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: &exp,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: "web", UID: uid},
	}}
}

func newTestTokenCache(g *fakeGetter) (*tokenCache, *fakeClock) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	g.now = clock.now
	tc := newTokenCache(slog.New(slog.DiscardHandler))
	tc.now, tc.jitter = clock.now, noJitter
	return tc, clock
}

func TestTokenCacheRefreshAt80Percent(t *testing.T) {
	g := newFakeGetter()
	tc, clock := newTestTokenCache(g)
	get := func() string {
		t.Helper()
		tr, err := tc.get(context.Background(), g, "ns", "default", tokenReq(3600, "uid-1"))
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	first := get()
	clock.step(47 * time.Minute) // < 80% of an hour
	if got := get(); got != first || g.tokenCalls() != 1 {
		t.Errorf("refreshed early: %s, %d calls", got, g.tokenCalls())
	}
	clock.step(2 * time.Minute) // 49m > 48m
	if got := get(); got == first || g.tokenCalls() != 2 {
		t.Errorf("not refreshed after 80%%: %s, %d calls", got, g.tokenCalls())
	}
}

func TestTokenCacheRefreshAfterADay(t *testing.T) {
	g := newFakeGetter()
	tc, clock := newTestTokenCache(g)
	req := func() *authenticationv1.TokenRequest { return tokenReq(7*24*3600, "uid-1") }
	if _, err := tc.get(context.Background(), g, "ns", "default", req()); err != nil {
		t.Fatal(err)
	}
	clock.step(23 * time.Hour)
	if _, err := tc.get(context.Background(), g, "ns", "default", req()); err != nil || g.tokenCalls() != 1 {
		t.Fatalf("refreshed before a day: %v, %d calls", err, g.tokenCalls())
	}
	clock.step(2 * time.Hour)
	if _, err := tc.get(context.Background(), g, "ns", "default", req()); err != nil || g.tokenCalls() != 2 {
		t.Errorf("not refreshed after a day: %v, %d calls", err, g.tokenCalls())
	}
}

func TestTokenCacheRefreshFailure(t *testing.T) {
	g := newFakeGetter()
	tc, clock := newTestTokenCache(g)
	first, err := tc.get(context.Background(), g, "ns", "default", tokenReq(3600, "uid-1"))
	if err != nil {
		t.Fatal(err)
	}
	g.tokenErr = errors.New("apiserver down")
	clock.step(55 * time.Minute) // due, not expired: the cached token serves
	got, err := tc.get(context.Background(), g, "ns", "default", tokenReq(3600, "uid-1"))
	if err != nil || got.Status.Token != first.Status.Token {
		t.Errorf("due token with API down: %v, %v", got, err)
	}
	clock.step(10 * time.Minute) // expired
	if _, err := tc.get(context.Background(), g, "ns", "default", tokenReq(3600, "uid-1")); err == nil || !strings.Contains(err.Error(), "failed to fetch token") {
		t.Errorf("expired token with API down: err %v", err)
	}
}

func TestTokenCacheKeys(t *testing.T) {
	g := newFakeGetter()
	tc, _ := newTestTokenCache(g)
	ctx := context.Background()
	a, _ := tc.get(ctx, g, "ns", "default", tokenReq(3600, "uid-1"))
	b, _ := tc.get(ctx, g, "ns", "default", tokenReq(3600, "uid-2"))
	c, _ := tc.get(ctx, g, "ns", "default", tokenReq(7200, "uid-1"))
	if a.Status.Token == b.Status.Token || a.Status.Token == c.Status.Token || g.tokenCalls() != 3 {
		t.Errorf("tokens shared across pods or lifetimes")
	}
	tc.forgetPod("uid-1")
	if len(tc.tokens) != 1 {
		t.Errorf("forgetPod left %d tokens, want 1", len(tc.tokens))
	}
}
