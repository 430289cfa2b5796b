// Package etcd gives the control plane its storage: either an etcd server
// embedded in the process (the default, one member on loopback) or an
// external etcd cluster. Both are reached through the same clientv3 client,
// so the API server has one storage code path.
//
//	p, err := pki.EnsureEtcd("/var/lib/nodeagent/pki", pki.Options{})
//	e, err := etcd.Start(ctx, etcd.Config{DataDir: "/var/lib/nodeagent/etcd"}.WithPKI(p))
//	if err != nil { ... }
//	defer e.Close()
//	cli := e.Client()
//
// With Config.Servers set (kube-apiserver's --etcd-servers), nothing is
// embedded and CAFile/CertFile/KeyFile configure client TLS.
//
// The embedded server serves TLS on both its ports and accepts only
// clients presenting a certificate of ServerTLS.TrustedCAFile (kubeadm's
// etcd settings); it refuses to start without. A data dir written by a
// plain-HTTP member opens as it is: only its recorded peer URL changes.
//
// The embedded server reopens the same data directory on restart, logs at
// warn level, and compacts its history every five minutes as kube-apiserver
// does for an external etcd. Config.Tuning sets its quota (2 GiB), the
// compaction retention and the raft timings, checked as etcd checks its
// flags. Etcd.WatchSpace clears its NOSPACE alarm: compaction to the
// current revision, defragmentation, then the disarm, so writes resume.
package etcd
