package etcd

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Defaults of the embedded server's tuning: etcd's own, except the
// compaction retention (etcd's default keeps every revision; kube-apiserver
// compacts every 5 minutes, which the embedded server does itself).
const (
	DefaultQuotaBackendBytes       = int64(2 << 30) // etcd's 2 GiB
	DefaultCompactionRetention     = "5m"
	DefaultHeartbeatIntervalMs     = 100
	DefaultElectionTimeoutMs       = 1000
	maxElectionTimeoutMs           = 50000          // etcd's maxElectionMs
	suggestedMaxQuotaBackendBytes  = int64(8 << 30) // etcd's MaxQuotaBytes
	minElectionTimeoutInHeartbeats = 5
)

// Tuning is the embedded server's etcd settings, under the names of
// etcd's flags (with "etcd-" before them on `nodeagent server`).
type Tuning struct {
	// QuotaBackendBytes is the database size at which etcd raises the
	// NOSPACE alarm and refuses writes (0: 2 GiB).
	QuotaBackendBytes int64
	// CompactionRetention is etcd's --auto-compaction-retention in
	// periodic mode: a duration ("5m") or whole hours ("1"); "0" disables
	// compaction, "" is the default 5m.
	CompactionRetention string
	// HeartbeatIntervalMs and ElectionTimeoutMs are the raft timings in
	// milliseconds (0: etcd's 100 and 1000).
	HeartbeatIntervalMs, ElectionTimeoutMs uint
}

func (t Tuning) withDefaults() Tuning {
	if t.QuotaBackendBytes == 0 {
		t.QuotaBackendBytes = DefaultQuotaBackendBytes
	}
	if t.CompactionRetention == "" {
		t.CompactionRetention = DefaultCompactionRetention
	}
	if t.HeartbeatIntervalMs == 0 {
		t.HeartbeatIntervalMs = DefaultHeartbeatIntervalMs
	}
	if t.ElectionTimeoutMs == 0 {
		t.ElectionTimeoutMs = DefaultElectionTimeoutMs
	}
	return t
}

// Validate checks t (after its defaults) as etcd checks its flags, with
// etcd's messages under the flags' `nodeagent server` names.
func (t Tuning) Validate() error {
	t = t.withDefaults()
	if t.QuotaBackendBytes < 0 {
		return fmt.Errorf("--etcd-quota-backend-bytes must not be negative (set to %d)", t.QuotaBackendBytes)
	}
	if _, err := compactionRetention(t.CompactionRetention); err != nil {
		return err
	}
	if minElectionTimeoutInHeartbeats*t.HeartbeatIntervalMs > t.ElectionTimeoutMs {
		return fmt.Errorf("--etcd-election-timeout[%vms] should be at least as 5 times as --etcd-heartbeat-interval[%vms]",
			t.ElectionTimeoutMs, t.HeartbeatIntervalMs)
	}
	if t.ElectionTimeoutMs > maxElectionTimeoutMs {
		return fmt.Errorf("--etcd-election-timeout[%vms] is too long, and should be set less than %vms",
			t.ElectionTimeoutMs, maxElectionTimeoutMs)
	}
	return nil
}

// compactionRetention parses a periodic retention as etcd does: a
// non-negative integer is hours, anything else a duration.
func compactionRetention(v string) (time.Duration, error) {
	if h, err := strconv.Atoi(v); err == nil && h >= 0 {
		return time.Duration(h) * time.Hour, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--etcd-auto-compaction-retention %q: error parsing CompactionRetention: %w", v, err)
	}
	if d < 0 {
		return 0, errors.New("--etcd-auto-compaction-retention must not be negative")
	}
	return d, nil
}

// apply sets t (validated, with defaults) on the embedded server's config.
func (t Tuning) apply(ec *embed.Config) {
	t = t.withDefaults()
	ec.QuotaBackendBytes = t.QuotaBackendBytes
	ec.AutoCompactionMode = embed.CompactorModePeriodic
	ec.AutoCompactionRetention = t.CompactionRetention
	ec.TickMs = t.HeartbeatIntervalMs
	ec.ElectionMs = t.ElectionTimeoutMs
}

// quotaWarning is etcd's advice when the quota exceeds what it suggests.
func (t Tuning) quotaWarning() string {
	if t.withDefaults().QuotaBackendBytes > suggestedMaxQuotaBackendBytes {
		return "quota exceeds the maximum value etcd suggests (8 GiB)"
	}
	return ""
}

// IsDefault reports whether t sets nothing beyond the defaults.
func (t Tuning) IsDefault() bool { return t.withDefaults() == Tuning{}.withDefaults() }
