package etcd

import (
	"context"
	"errors"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultSpaceCheckInterval is how often the embedded server's alarms
// are checked.
const DefaultSpaceCheckInterval = 10 * time.Second

// WatchSpace runs until ctx ends: whenever the embedded server has raised
// the NOSPACE alarm (its database reached the quota, and it refuses
// writes), it does what etcd's maintenance guide says: compact to the
// current revision, defragment, and disarm the alarm once the database
// is under the quota again, so that writes resume. The latest value of
// every key survives; only history goes (watches from before the
// compaction get 410 Gone and relist). External etcd is its operators'.
func (e *Etcd) WatchSpace(ctx context.Context, interval time.Duration) {
	if e.embedded == nil {
		return
	}
	if interval <= 0 {
		interval = DefaultSpaceCheckInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := e.recoverSpace(ctx); err != nil && ctx.Err() == nil {
			e.log.Error("etcd NOSPACE recovery failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// recoverSpace clears a NOSPACE alarm, if there is one.
func (e *Etcd) recoverSpace(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	alarms, err := e.client.AlarmList(ctx)
	if err != nil {
		return fmt.Errorf("list alarms: %w", err)
	}
	var nospace []*pb.AlarmMember
	for _, a := range alarms.Alarms {
		if a.Alarm == pb.AlarmType_NOSPACE {
			nospace = append(nospace, a)
		}
	}
	if len(nospace) == 0 {
		return nil
	}
	endpoint := e.client.Endpoints()[0]
	status, err := e.client.Status(ctx, endpoint)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	e.log.Warn("etcd database reached its quota (NOSPACE): compacting and defragmenting",
		"dbSize", status.DbSize, "quota", e.quota, "revision", status.Header.Revision)
	if _, err := e.client.Compact(ctx, status.Header.Revision, clientv3.WithCompactPhysical()); err != nil &&
		!isCompacted(err) {
		return fmt.Errorf("compact to revision %d: %w", status.Header.Revision, err)
	}
	if _, err := e.client.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragment: %w", err)
	}
	if status, err = e.client.Status(ctx, endpoint); err != nil {
		return fmt.Errorf("status after defragmentation: %w", err)
	}
	if status.DbSize >= e.quota {
		return fmt.Errorf("database still %d bytes after compaction and defragmentation (quota %d): the data itself fills the quota, raise --etcd-quota-backend-bytes",
			status.DbSize, e.quota)
	}
	for _, a := range nospace {
		if _, err := e.client.AlarmDisarm(ctx, &clientv3.AlarmMember{MemberID: a.MemberID, Alarm: a.Alarm}); err != nil {
			return fmt.Errorf("disarm NOSPACE: %w", err)
		}
	}
	e.log.Warn("etcd NOSPACE alarm disarmed: writes resume", "dbSize", status.DbSize, "quota", e.quota)
	return nil
}

// isCompacted: the revision is compacted already (etcd's auto-compaction
// got there first).
func isCompacted(err error) bool { return errors.Is(err, rpctypes.ErrCompacted) }
