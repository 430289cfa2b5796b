package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

func names(items []runtime.Object) []string {
	var out []string
	for _, o := range items {
		cm := o.(*v1.ConfigMap)
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	return out
}

func TestListConsistentAndFromCache(t *testing.T) {
	// The store gets a client of its own whose reads are counted, to prove
	// that resourceVersion "0" and "N" lists do not touch etcd.
	client := newClient()
	t.Cleanup(func() { client.Close() })
	reads := &countingKV{KV: client.KV}
	client.KV = reads
	s := newStore(t, func(c *Config) { c.Client = client })
	ctx := context.Background()
	for i := range 3 {
		mustCreate(t, s, configMap("a", fmt.Sprint("cm", i), nil))
	}
	mustCreate(t, s, configMap("b", "cm0", nil))
	before := mustCreate(t, s, configMap("ab", "cm0", nil)) // "a" must not match "ab"
	last := mustCreate(t, s, configMap("b", "cm1", nil))

	all, err := s.List(ctx, "", ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 6 || rvOf(t, last) > mustParse(t, all.ResourceVersion) {
		t.Fatalf("consistent list: %v at %s", names(all.Items), all.ResourceVersion)
	}
	inA, err := s.List(ctx, "a", ListOptions{})
	if err != nil || strings.Join(names(inA.Items), ",") != "a/cm0,a/cm1,a/cm2" {
		t.Fatalf("list in a: %v %v", names(inA.Items), err)
	}

	// "N": from the cache once it has seen N (no waiting in the test).
	fromCache, err := s.List(ctx, "", ListOptions{ResourceVersion: last.ResourceVersion})
	if err != nil || len(fromCache.Items) != 6 {
		t.Fatalf("list at rv %s: %v %v", last.ResourceVersion, names(fromCache.Items), err)
	}
	// Exact: etcd's state at that revision.
	exact, err := s.List(ctx, "", ListOptions{ResourceVersion: before.ResourceVersion, ResourceVersionMatch: "Exact"})
	if err != nil || len(exact.Items) != 5 || exact.ResourceVersion != before.ResourceVersion {
		t.Fatalf("exact list at %s: %v at %s, %v", before.ResourceVersion, names(exact.Items), exact.ResourceVersion, err)
	}
	if _, err := s.List(ctx, "", ListOptions{ResourceVersion: "0", ResourceVersionMatch: "Exact"}); !apierrors.IsBadRequest(err) {
		t.Errorf("Exact with rv 0: %v, want BadRequest", err)
	}

	waitCache(t, s, rvOf(t, last))
	readsBefore := reads.gets.Load()
	zero, err := s.List(ctx, "a", ListOptions{ResourceVersion: "0"})
	if err != nil || len(zero.Items) != 3 || mustParse(t, zero.ResourceVersion) < rvOf(t, last) {
		t.Fatalf("list rv 0: %v at %s, %v", names(zero.Items), zero.ResourceVersion, err)
	}
	if _, err := s.List(ctx, "", ListOptions{ResourceVersion: last.ResourceVersion}); err != nil {
		t.Fatal(err)
	}
	if n := reads.gets.Load() - readsBefore; n != 0 {
		t.Errorf("lists from the cache made %d etcd reads", n)
	}
}

// countingKV counts etcd range requests.
type countingKV struct {
	clientv3.KV
	gets atomic.Int32
}

func (c *countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	c.gets.Add(1)
	return c.KV.Get(ctx, key, opts...)
}

func TestListTooLargeResourceVersion(t *testing.T) {
	s := newStore(t, nil)
	rv := strconv.FormatInt(s.CurrentRV()+1_000_000, 10)
	_, err := s.List(context.Background(), "", ListOptions{ResourceVersion: rv})
	if !apierrors.IsTimeout(err) || !apierrors.HasStatusCause(err, "ResourceVersionTooLarge") {
		t.Fatalf("list at future rv: %v, want 504 ResourceVersionTooLarge", err)
	}
}

func mustParse(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := parseRV(rv)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pageAll lists with opts page by page; it checks that every page has the
// same resourceVersion and returns the names and the pages' sizes.
func pageAll(t *testing.T, s *Store, opts ListOptions, between func()) ([]string, []int, []*int64) {
	t.Helper()
	var (
		all       []string
		sizes     []int
		remaining []*int64
		rv        string
	)
	for page := 0; ; page++ {
		res, err := s.List(context.Background(), "", opts)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if rv != "" && res.ResourceVersion != rv {
			t.Errorf("page %d at rv %s, first page at %s", page, res.ResourceVersion, rv)
		}
		rv = res.ResourceVersion
		all = append(all, names(res.Items)...)
		sizes = append(sizes, len(res.Items))
		remaining = append(remaining, res.RemainingItemCount)
		if res.Continue == "" {
			return all, sizes, remaining
		}
		if between != nil {
			between()
		}
		opts.Continue, opts.ResourceVersion = res.Continue, ""
	}
}

func TestListPaging(t *testing.T) {
	s := newStore(t, nil)
	var last *v1.ConfigMap
	for i := range 25 {
		labels := map[string]string{"even": strconv.FormatBool(i%2 == 0)}
		last = mustCreate(t, s, configMap(fmt.Sprint("ns", i%3), fmt.Sprintf("cm%02d", i), labels))
	}

	// Writes between pages stay invisible: all pages are one snapshot.
	extra := 0
	between := func() {
		last = mustCreate(t, s, configMap("ns0", fmt.Sprint("late", extra), nil))
		extra++
	}
	got, sizes, remaining := pageAll(t, s, ListOptions{Limit: 10}, between)
	if fmt.Sprint(sizes) != "[10 10 5]" || len(got) != 25 || !sort.StringsAreSorted(got) {
		t.Fatalf("pages %v: %v", sizes, got)
	}
	if *remaining[0] != 15 || *remaining[1] != 5 || remaining[2] != nil {
		t.Errorf("remainingItemCount %v %v %v", *remaining[0], *remaining[1], remaining[2])
	}

	// Filter before limit: pages are filled with matching items; no count.
	even := func(o runtime.Object) bool { return o.(*v1.ConfigMap).Labels["even"] == "true" }
	got, sizes, remaining = pageAll(t, s, ListOptions{Limit: 10, Filter: even}, nil)
	if fmt.Sprint(sizes) != "[10 3]" || len(got) != 13 || remaining[0] != nil {
		t.Fatalf("filtered pages %v: %v (remaining %v)", sizes, got, remaining[0])
	}

	// From the cache, then continued from etcd at the cache's revision.
	waitCache(t, s, rvOf(t, last))
	got, sizes, _ = pageAll(t, s, ListOptions{ResourceVersion: "0", Limit: 10}, nil)
	if len(got) != 25+extra || sizes[0] != 10 {
		t.Fatalf("pages from cache %v: %d items", sizes, len(got))
	}

	// The token is upstream's format.
	res, err := s.List(context.Background(), "", ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := base64.RawURLEncoding.DecodeString(res.Continue)
	if err != nil {
		t.Fatal(err)
	}
	var tok map[string]any
	if err := json.Unmarshal(raw, &tok); err != nil || tok["v"] != "meta.k8s.io/v1" || tok["start"] != "ns0/cm00\x00" ||
		fmt.Sprint(tok["rv"]) != res.ResourceVersion {
		t.Errorf("continue token %s: %v", raw, err)
	}
	if _, err := s.List(context.Background(), "", ListOptions{Continue: "bm90IGpzb24"}); !apierrors.IsBadRequest(err) {
		t.Errorf("garbage continue: %v, want BadRequest", err)
	}
}

func TestContinueAfterCompaction(t *testing.T) {
	s := newStore(t, nil)
	ctx := context.Background()
	for i := range 5 {
		mustCreate(t, s, configMap("default", fmt.Sprint("cm", i), nil))
	}
	first, err := s.List(ctx, "", ListOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	latest := mustCreate(t, s, configMap("default", "cm9", nil))
	if _, err := testClient.Compact(ctx, rvOf(t, latest)); err != nil {
		t.Fatal(err)
	}

	_, err = s.List(ctx, "", ListOptions{Limit: 2, Continue: first.Continue})
	if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "continue parameter is too old") {
		t.Fatalf("continue after compaction: %v, want 410", err)
	}
	// The 410 carries a token to go on, inconsistently, at the latest revision.
	status := err.(apierrors.APIStatus).Status()
	rest, _, _ := pageAll(t, s, ListOptions{Limit: 2, Continue: status.ListMeta.Continue}, nil)
	if strings.Join(rest, ",") != "default/cm2,default/cm3,default/cm4,default/cm9" {
		t.Errorf("inconsistent continue: %v", rest)
	}

	_, err = s.List(ctx, "", ListOptions{ResourceVersion: first.ResourceVersion, ResourceVersionMatch: "Exact"})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("exact list at compacted rv: %v, want 410", err)
	}
}
