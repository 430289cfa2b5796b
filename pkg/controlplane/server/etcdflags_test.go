package server

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
)

// parseServerFlags parses args as `nodeagent server` does, then fills
// the defaults.
func parseServerFlags(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	var c Config
	fs := pflag.NewFlagSet("server", pflag.ContinueOnError)
	c.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.setDefaults()
	return c, nil
}

func TestEventTTLFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		want    time.Duration
		wantErr string
	}{
		{args: nil, want: time.Hour},
		{args: []string{"--event-ttl=2s"}, want: 2 * time.Second},
		// Upstream's 0 gives events no lease.
		{args: []string{"--event-ttl=0"}, want: 0},
		{args: []string{"--event-ttl=-1s"}, wantErr: `invalid argument "-1s" for "--event-ttl" flag: --event-ttl must not be negative`},
	} {
		c, err := parseServerFlags(t, tc.args...)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		if got := c.eventTTL(); got != tc.want {
			t.Errorf("%v: event TTL %s, want %s", tc.args, got, tc.want)
		}
	}
	var c Config
	c.setDefaults()
	if got := c.eventTTL(); got != time.Hour {
		t.Errorf("zero Config: event TTL %s, want 1h", got)
	}
}

func TestEtcdTuningFlags(t *testing.T) {
	c, err := parseServerFlags(t)
	if err != nil {
		t.Fatal(err)
	}
	want := etcd.Tuning{QuotaBackendBytes: 2 << 30, CompactionRetention: "5m", HeartbeatIntervalMs: 100, ElectionTimeoutMs: 1000}
	if c.EtcdTuning != want {
		t.Errorf("defaults %+v, want %+v", c.EtcdTuning, want)
	}
	c, err = parseServerFlags(t, "--etcd-quota-backend-bytes=67108864", "--etcd-auto-compaction-retention=1",
		"--etcd-heartbeat-interval=200", "--etcd-election-timeout=2000")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.validate(); err != nil {
		t.Errorf("valid tuning: %v", err)
	}
	want = etcd.Tuning{QuotaBackendBytes: 64 << 20, CompactionRetention: "1", HeartbeatIntervalMs: 200, ElectionTimeoutMs: 2000}
	if c.EtcdTuning != want {
		t.Errorf("parsed %+v, want %+v", c.EtcdTuning, want)
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"--etcd-heartbeat-interval=300"}, "--etcd-election-timeout[1000ms] should be at least as 5 times as --etcd-heartbeat-interval[300ms]"},
		{[]string{"--etcd-election-timeout=60000"}, "--etcd-election-timeout[60000ms] is too long, and should be set less than 50000ms"},
		{[]string{"--etcd-auto-compaction-retention=weekly"}, "error parsing CompactionRetention"},
		{[]string{"--etcd-servers=https://10.0.0.1:2379", "--etcd-quota-backend-bytes=1024"}, "cannot be used with --etcd-servers"},
	} {
		c, err := parseServerFlags(t, tc.args...)
		if err == nil {
			err = c.validate()
		}
		if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
			t.Errorf("%v: err %v, want %q", tc.args, err, tc.wantErr)
		}
	}
	// External etcd with the defaults is fine.
	if c, _ := parseServerFlags(t, "--etcd-servers=https://10.0.0.1:2379"); c.validate() != nil {
		t.Errorf("external etcd with default tuning: %v", c.validate())
	}
}
