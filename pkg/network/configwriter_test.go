package network

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

func newTestWriter(t *testing.T, dir string, binDirs ...string) *ConfigWriter {
	t.Helper()
	w, err := NewConfigWriter(ConfigWriterConfig{
		Dir: dir, BinDirs: binDirs,
		CNI:    CNIConfig{NetworkName: "nodeagent", IPMasq: true, HairpinMode: true},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("NewConfigWriter: %v", err)
	}
	return w
}

func wantStatus(t *testing.T, w *ConfigWriter, ready bool, reason, inMessage string) {
	t.Helper()
	gotReady, gotReason, msg := w.Status()
	if gotReady != ready || gotReason != reason || !strings.Contains(msg, inMessage) {
		t.Errorf("Status() = %v, %q, %q; want %v, %q, a message with %q", gotReady, gotReason, msg, ready, reason, inMessage)
	}
}

func TestConfigWriter(t *testing.T) {
	requirePlugins(t, "bridge", "host-local", "portmap")
	dir := filepath.Join(t.TempDir(), "net.d") // created by Sync
	w := newTestWriter(t, dir, systemPluginDir)
	ctx := context.Background()
	wantStatus(t, w, false, ReasonNoRouteCreated, "not written yet")

	changed, err := w.Sync(ctx, nil)
	if err != nil || changed {
		t.Fatalf("Sync without pod CIDRs = %v, %v; want false, nil", changed, err)
	}
	wantStatus(t, w, false, ReasonNoRouteCreated, MessageWaitingForPodCIDR)
	if _, err := os.Stat(w.Path()); !os.IsNotExist(err) {
		t.Fatalf("config written without pod CIDRs (stat: %v)", err)
	}

	for i, want := range []bool{true, false} { // written, then unchanged
		changed, err = w.Sync(ctx, []string{"10.244.3.0/24"})
		if err != nil || changed != want {
			t.Fatalf("Sync %d = %v, %v; want %v, nil", i, changed, err, want)
		}
	}
	wantStatus(t, w, true, ReasonRouteCreated, "10.244.3.0/24")
	if w.Path() != filepath.Join(dir, "10-nodeagent.conflist") {
		t.Errorf("Path() = %s", w.Path())
	}
	list, err := libcni.ConfListFromFile(w.Path())
	if err != nil || list.Name != "nodeagent" {
		t.Fatalf("written config: %v, %v", list, err)
	}

	// A bad CIDR leaves the good file in place and says why.
	before, _ := os.ReadFile(w.Path())
	if _, err := w.Sync(ctx, []string{"10.244.3.0/24", "10.244.4.0/24"}); err == nil {
		t.Fatal("Sync with two IPv4 CIDRs: want an error")
	}
	wantStatus(t, w, false, ReasonNoRouteCreated, "at most one CIDR per IP family")
	if after, _ := os.ReadFile(w.Path()); string(after) != string(before) {
		t.Error("a failed Sync changed the config in place")
	}
}

func TestConfigWriterReportsMissingPlugins(t *testing.T) {
	dir := t.TempDir()
	w := newTestWriter(t, dir, t.TempDir())
	if _, err := w.Sync(context.Background(), []string{"10.244.3.0/24"}); err == nil {
		t.Fatal("Sync with no plugins: want an error")
	}
	_, _, msg := w.Status()
	if strings.Contains(msg, "\n") || !strings.Contains(msg, `failed to find plugin "bridge"`) ||
		!strings.Contains(msg, `failed to find plugin "host-local"`) {
		t.Errorf("status message %q: want each missing plugin named, on one line", msg)
	}
	wantStatus(t, w, false, ReasonNoRouteCreated, "portmap")
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("config directory not empty after a failed validation: %v", entries)
	}
}

func TestNewConfigWriterRejects(t *testing.T) {
	good := ConfigWriterConfig{Dir: "/d", BinDirs: []string{"/b"}, CNI: CNIConfig{NetworkName: "n"}}
	tests := []struct {
		name   string
		mutate func(*ConfigWriterConfig)
	}{
		{"no dir", func(c *ConfigWriterConfig) { c.Dir = "" }},
		{"no bin dirs", func(c *ConfigWriterConfig) { c.BinDirs = nil }},
		{"no name", func(c *ConfigWriterConfig) { c.CNI.NetworkName = "" }},
		{"not a conflist", func(c *ConfigWriterConfig) { c.FileName = "10-n.conf" }},
		{"a path", func(c *ConfigWriterConfig) { c.FileName = "x/10-n.conflist" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good
			tt.mutate(&c)
			if _, err := NewConfigWriter(c); err == nil {
				t.Errorf("NewConfigWriter(%+v): want an error", c)
			}
		})
	}
}
