// Package storage keeps ONE API resource in etcd, as JSON, behind a watch
// cache, with the semantics of the upstream kube-apiserver storage layer
// (k8s.io/apiserver/pkg/storage/etcd3 and cacher) that clients rely on.
//
// Keys follow the upstream layout: <Prefix>/<resource>/<namespace>/<name>
// (cluster-scoped: <Prefix>/<resource>/<name>). Values are the object's JSON
// without resourceVersion and TypeMeta; resourceVersion is etcd's
// ModRevision, set on every object read back.
//
// Writes (Create, Update, Delete) and consistent reads (Get, List with
// resourceVersion "" or Exact, continue pages) go to etcd through clientv3,
// the same path for embedded and external etcd. Store.Run keeps ONE etcd
// watch that feeds the cache (current objects plus a ring of recent events);
// every Watch and every List with resourceVersion "0" or "N" is served from
// it, so N clients cost one etcd watch.
//
//	s, err := storage.New(storage.Config{Client: cli, Resource: v1.Resource("pods"),
//		Namespaced: true, NewFunc: func() runtime.Object { return &v1.Pod{} }})
//	go s.Run(ctx)
//	<-s.Ready()
//	w, err := s.Watch(ctx, "default", storage.WatchOptions{ResourceVersion: "0"})
//
// Config.Metrics records every etcd request under upstream's
// etcd_request_duration_seconds, etcd_requests_total and
// etcd_request_errors_total (labels operation, group, resource).
//
// Config.TTL gives every write an etcd lease (events: --event-ttl), so
// that etcd deletes the object once the TTL passes without a write; Leases
// reuses one lease per window of writes as upstream's lease manager does.
//
// Errors are k8s.io/apimachinery/pkg/api/errors values carrying the
// configured GroupResource, so the HTTP layer maps them to Status codes.
// Objects returned by the Store have an empty TypeMeta; the caller sets it.
package storage
