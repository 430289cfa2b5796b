package etcd

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startEmbeddedT(t *testing.T, dir string, client, peer int) *Etcd {
	t.Helper()
	e, err := Start(t.Context(), Config{DataDir: dir, ClientPort: client, PeerPort: peer, StartTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if !e.Embedded() {
		t.Fatal("expected an embedded server")
	}
	return e
}

func get(t *testing.T, e *Etcd, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	resp, err := e.Client().Get(ctx, key)
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

func put(t *testing.T, e *Etcd, key, val string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := e.Client().Put(ctx, key, val); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

func TestEmbeddedRestartKeepsData(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	client, peer := freePort(t), freePort(t)

	e := startEmbeddedT(t, dir, client, peer)
	put(t, e, "/registry/test", "v1")
	if got := get(t, e, "/registry/test"); got != "v1" {
		t.Fatalf("get = %q, want v1", got)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	// Same data dir and ports: the member restarts and the data is there.
	e = startEmbeddedT(t, dir, client, peer)
	defer e.Close()
	if got := get(t, e, "/registry/test"); got != "v1" {
		t.Fatalf("after restart get = %q, want v1", got)
	}
}

func TestExternal(t *testing.T) {
	// The "external cluster" is a separate embedded etcd on its own ports.
	client := freePort(t)
	cluster := startEmbeddedT(t, t.TempDir(), client, freePort(t))
	defer cluster.Close()
	put(t, cluster, "/shared", "from-cluster")

	e, err := Start(t.Context(), Config{
		Servers:      []string{"http://127.0.0.1:" + strconv.Itoa(client)},
		StartTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("Start external: %v", err)
	}
	defer e.Close()
	if e.Embedded() || e.Err() != nil {
		t.Fatal("external mode must not embed a server")
	}
	if got := get(t, e, "/shared"); got != "from-cluster" {
		t.Fatalf("get = %q", got)
	}
	put(t, e, "/written-by-client", "x")
	if got := get(t, cluster, "/written-by-client"); got != "x" {
		t.Fatalf("cluster sees %q", got)
	}
}

func TestExternalUnreachable(t *testing.T) {
	_, err := Start(t.Context(), Config{
		Servers:      []string{"http://127.0.0.1:" + strconv.Itoa(freePort(t))},
		StartTimeout: time.Second,
	})
	if err == nil {
		t.Fatal("expected an error for an unreachable cluster")
	}
	t.Log(err)
}

func TestEmbeddedRequiresDataDir(t *testing.T) {
	if _, err := Start(t.Context(), Config{}); err == nil {
		t.Fatal("expected an error without DataDir")
	}
}
