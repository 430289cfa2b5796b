// Package logrotate rotates the container log files the runtime writes,
// as the kubelet's container log manager does (pkg/kubelet/logs).
//
// Every Interval (10s by default) the Manager lists the running containers
// and queues them for Workers goroutines. A worker asks the runtime for the
// container's log path and, once the file reaches MaxSize bytes:
//
//  1. removes leftovers of an interrupted earlier pass (".tmp" files, and
//     uncompressed files whose ".gz" already exists);
//  2. removes the oldest rotated files so that, with the file about to be
//     rotated and the new current file, at most MaxFiles remain;
//  3. gzips every remaining uncompressed rotated file (to "<name>.gz");
//  4. renames the current file to "<log>.<YYYYMMDD-hhmmss>" and asks the
//     runtime (CRI ReopenContainerLog) to start a new one. If the runtime
//     refuses, the rename is undone so that nothing is lost and the next
//     pass tries again.
//
// The most recent rotated file stays uncompressed: the runtime may still
// finish a write to it and log readers (a `kubectl logs -f` in progress)
// may still be reading it. Stopped containers are left alone: they write
// nothing more.
//
// Use:
//
//	m, err := logrotate.New(logrotate.Config{Runtime: rt, MaxSize: 10 << 20, MaxFiles: 5})
//	...
//	go m.Run(ctx) // returns when ctx ends
//
// RemoveLogs deletes a container's log together with its rotated files,
// for callers that remove containers.
package logrotate
