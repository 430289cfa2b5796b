package server

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
)

// addEtcdTuningFlags registers the embedded etcd's settings under etcd's
// flag names with "etcd-" before them, with etcd's units (bytes,
// milliseconds) and defaults.
func (c *Config) addEtcdTuningFlags(fs *pflag.FlagSet) {
	t := &c.EtcdTuning
	fs.Int64Var(&t.QuotaBackendBytes, "etcd-quota-backend-bytes", etcd.DefaultQuotaBackendBytes,
		"Maximum size in bytes of the embedded etcd's database; beyond it etcd raises the NOSPACE alarm and refuses writes.")
	fs.StringVar(&t.CompactionRetention, "etcd-auto-compaction-retention", etcd.DefaultCompactionRetention,
		"How much history the embedded etcd keeps before compacting it: a duration (5m) or whole hours (1); 0 disables compaction.")
	fs.UintVar(&t.HeartbeatIntervalMs, "etcd-heartbeat-interval", etcd.DefaultHeartbeatIntervalMs,
		"Time (in milliseconds) of a heartbeat interval of the embedded etcd.")
	fs.UintVar(&t.ElectionTimeoutMs, "etcd-election-timeout", etcd.DefaultElectionTimeoutMs,
		"Time (in milliseconds) for an election of the embedded etcd to timeout; at least 5 heartbeat intervals.")
}

// validateEtcdTuning refuses settings the embedded etcd would refuse,
// and settings of the embedded etcd when there is none.
func (c *Config) validateEtcdTuning() error {
	if len(c.EtcdServers) > 0 {
		if c.EtcdTuning.Validate() != nil || !c.EtcdTuning.IsDefault() {
			return errors.New("--etcd-quota-backend-bytes, --etcd-auto-compaction-retention, --etcd-heartbeat-interval and --etcd-election-timeout configure the embedded etcd: they cannot be used with --etcd-servers")
		}
		return nil
	}
	return c.EtcdTuning.Validate()
}

// eventTTLFlag is --event-ttl: upstream's 0 (no TTL) is the Config's
// negative value, so that a zero Config takes the default.
type eventTTLFlag struct{ ttl *time.Duration }

func (f *eventTTLFlag) String() string {
	if f.ttl == nil || *f.ttl < 0 {
		return "0s"
	}
	return f.ttl.String()
}

func (f *eventTTLFlag) Set(v string) error {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		return err
	case d < 0:
		return errors.New("--event-ttl must not be negative")
	case d == 0:
		d = -1
	}
	*f.ttl = d
	return nil
}

func (f *eventTTLFlag) Type() string { return "duration" }

// eventTTL is the API server's EventTTL (zero: none).
func (c *Config) eventTTL() time.Duration { return max(c.EventTTL, 0) }
