package etcd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTuningValidate(t *testing.T) {
	for _, tc := range []struct {
		name    string
		tuning  Tuning
		wantErr string
	}{
		{"defaults", Tuning{}, ""},
		{"hours", Tuning{CompactionRetention: "1"}, ""},
		{"disabled compaction", Tuning{CompactionRetention: "0"}, ""},
		{"five heartbeats", Tuning{HeartbeatIntervalMs: 200, ElectionTimeoutMs: 1000}, ""},
		{"negative quota", Tuning{QuotaBackendBytes: -1}, "--etcd-quota-backend-bytes must not be negative (set to -1)"},
		{"bad retention", Tuning{CompactionRetention: "soon"}, `--etcd-auto-compaction-retention "soon": error parsing CompactionRetention`},
		{"negative retention", Tuning{CompactionRetention: "-5m"}, "--etcd-auto-compaction-retention must not be negative"},
		{"election under five heartbeats", Tuning{HeartbeatIntervalMs: 300, ElectionTimeoutMs: 1000},
			"--etcd-election-timeout[1000ms] should be at least as 5 times as --etcd-heartbeat-interval[300ms]"},
		{"default election, slow heartbeat", Tuning{HeartbeatIntervalMs: 250},
			"--etcd-election-timeout[1000ms] should be at least as 5 times as --etcd-heartbeat-interval[250ms]"},
		{"election too long", Tuning{ElectionTimeoutMs: 50001},
			"--etcd-election-timeout[50001ms] is too long, and should be set less than 50000ms"},
	} {
		err := tc.tuning.Validate()
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}

func TestCompactionRetention(t *testing.T) {
	for v, want := range map[string]time.Duration{"5m": 5 * time.Minute, "1": time.Hour, "0": 0, "90s": 90 * time.Second} {
		if got, err := compactionRetention(v); err != nil || got != want {
			t.Errorf("compactionRetention(%q) = %s, %v; want %s", v, got, err, want)
		}
	}
}

func TestEmbeddedTakesTuning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "etcd")
	cfg := Config{DataDir: dir, ClientPort: freePort(t), PeerPort: freePort(t), StartTimeout: 30 * time.Second,
		Tuning: Tuning{QuotaBackendBytes: 64 << 20, CompactionRetention: "1", HeartbeatIntervalMs: 50, ElectionTimeoutMs: 500}}
	cfg = withTLS(t, filepath.Join(filepath.Dir(dir), "pki"), cfg)
	e, err := Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer e.Close()
	got := e.embedded.Server.Cfg
	if got.QuotaBackendBytes != 64<<20 || got.TickMs != 50 || got.ElectionTicks != 10 || got.AutoCompactionRetention != time.Hour {
		t.Errorf("server config: quota %d, tick %dms, election ticks %d, retention %s; want 64 MiB, 50ms, 10, 1h",
			got.QuotaBackendBytes, got.TickMs, got.ElectionTicks, got.AutoCompactionRetention)
	}

	bad := cfg
	bad.Tuning = Tuning{HeartbeatIntervalMs: 500}
	if _, err := Start(t.Context(), bad); err == nil || !strings.Contains(err.Error(), "should be at least as 5 times") {
		t.Errorf("Start with election < 5 heartbeats: %v", err)
	}
}
