package storage

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Messages of upstream's etcd3 store, which clients may show or match.
const (
	expiredListMessage      = "The resourceVersion for the provided list is too old."
	inconsistentContinueMsg = "The provided continue parameter is too old to display a consistent list result. " +
		"You can start a new list without the continue parameter, or use the continue token in this response " +
		"to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent " +
		"list - objects that were created, modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
	// maxPageBatch caps how many keys one etcd range of a filtered page reads.
	maxPageBatch = 10000
)

// ListOptions mirror metav1.ListOptions. Filter (may be nil) selects items;
// it must not modify the object it is given.
type ListOptions struct {
	ResourceVersion      string
	ResourceVersionMatch string // "", "NotOlderThan" or "Exact"
	Limit                int64
	Continue             string
	Filter               func(runtime.Object) bool
}

// ListResult is one page of a list.
type ListResult struct {
	Items              []runtime.Object
	ResourceVersion    string
	Continue           string
	RemainingItemCount *int64 // only when there is no Filter and more pages follow
}

// List lists the objects in namespace ("" = all namespaces):
//
//   - resourceVersion "": consistent read from etcd at its current revision;
//   - "0": from the cache, whatever it holds;
//   - "N" (match "" or NotOlderThan): from the cache once it has seen N;
//   - "N" with match Exact: from etcd at revision N (410 if compacted).
//
// With Limit, items come in key order and Continue pages are read from etcd
// at the first page's revision, so all pages are one consistent snapshot.
func (s *Store) List(ctx context.Context, namespace string, opts ListOptions) (*ListResult, error) {
	prefix, err := s.listPrefix(namespace)
	if err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, apierrors.NewBadRequest("limit must not be negative")
	}
	if opts.Continue != "" {
		if opts.ResourceVersion != "" && opts.ResourceVersion != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		start, rev, err := decodeContinue(opts.Continue, prefix)
		if err != nil {
			return nil, err
		}
		// rev -1 means "continue at the latest revision" (an inconsistent
		// continue token handed out with a 410).
		return s.listEtcd(ctx, prefix, start, max(rev, 0), opts, true)
	}
	switch opts.ResourceVersionMatch {
	case "", string(metav1.ResourceVersionMatchNotOlderThan), string(metav1.ResourceVersionMatchExact):
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("unsupported resourceVersionMatch %q", opts.ResourceVersionMatch))
	}
	if opts.ResourceVersion == "" {
		if opts.ResourceVersionMatch != "" {
			return nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
		}
		return s.listEtcd(ctx, prefix, prefix, 0, opts, false)
	}
	rv, err := parseRV(opts.ResourceVersion)
	if err != nil {
		return nil, err
	}
	if opts.ResourceVersionMatch == string(metav1.ResourceVersionMatchExact) {
		if rv == 0 {
			return nil, apierrors.NewBadRequest("resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"")
		}
		return s.listEtcd(ctx, prefix, prefix, rv, opts, false)
	}
	return s.listCache(ctx, prefix, rv, opts)
}

// listCache serves a list from the watch cache once it has reached rv. A
// Limit is honoured: the continue token names the cache's revision, and the
// next pages are read from etcd at exactly that revision.
func (s *Store) listCache(ctx context.Context, prefix string, rv int64, opts ListOptions) (*ListResult, error) {
	if err := s.waitFresh(ctx, rv); err != nil {
		return nil, err
	}
	keys, objs, cacheRV := s.cache.snapshot(prefix, opts.Filter)
	res := &ListResult{ResourceVersion: strconv.FormatInt(cacheRV, 10)}
	if opts.Limit > 0 && int64(len(objs)) > opts.Limit {
		next, err := encodeContinue(keys[opts.Limit-1]+"\x00", prefix, cacheRV)
		if err != nil {
			return nil, err
		}
		res.Continue = next
		if opts.Filter == nil {
			remaining := int64(len(objs)) - opts.Limit
			res.RemainingItemCount = &remaining
		}
		objs = objs[:opts.Limit]
	}
	res.Items = make([]runtime.Object, len(objs))
	for i, o := range objs {
		res.Items[i] = o.DeepCopyObject()
	}
	return res, nil
}

// listEtcd reads [start, end of prefix) at revision rev (0 = current). With
// a Filter, it keeps reading (in growing batches) until the page holds Limit
// matching items, as upstream does.
func (s *Store) listEtcd(ctx context.Context, prefix, start string, rev int64, opts ListOptions, continuing bool) (*ListResult, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	end := clientv3.GetPrefixRangeEnd(prefix)
	batch := opts.Limit
	var (
		items      []runtime.Object
		lastKey    string
		more       bool
		firstCount int64 = -1
	)
	key := start
	for {
		ops := []clientv3.OpOption{clientv3.WithRange(end)}
		if rev > 0 {
			ops = append(ops, clientv3.WithRev(rev))
		}
		if batch > 0 {
			ops = append(ops, clientv3.WithLimit(batch))
		}
		began := time.Now()
		resp, err := s.client.Get(ctx, key, ops...)
		s.ops.list.record(began, err)
		if err != nil {
			return nil, s.listError(err, continuing, start, prefix, rev)
		}
		if rev == 0 {
			rev = resp.Header.Revision // later batches and pages read this snapshot
		}
		if firstCount < 0 {
			firstCount = resp.Count
		}
		more = resp.More
		for _, kv := range resp.Kvs {
			if opts.Limit > 0 && int64(len(items)) >= opts.Limit {
				more = true
				break
			}
			lastKey = string(kv.Key)
			obj, err := s.decodeKV(kv)
			if err != nil {
				return nil, err
			}
			if opts.Filter == nil || opts.Filter(obj) {
				items = append(items, obj)
			}
		}
		if !more || opts.Limit == 0 || int64(len(items)) >= opts.Limit {
			break
		}
		key = lastKey + "\x00"
		batch = min(batch*2, maxPageBatch)
	}
	res := &ListResult{Items: items, ResourceVersion: strconv.FormatInt(rev, 10)}
	if items == nil {
		res.Items = []runtime.Object{}
	}
	if more && opts.Limit > 0 {
		next, err := encodeContinue(lastKey+"\x00", prefix, rev)
		if err != nil {
			return nil, err
		}
		res.Continue = next
		if opts.Filter == nil {
			remaining := firstCount - int64(len(items))
			res.RemainingItemCount = &remaining
		}
	}
	return res, nil
}

// listError maps etcd errors as upstream: a compacted revision is 410 Gone;
// for a continue token the 410 carries a token to go on at the latest
// revision (inconsistently).
func (s *Store) listError(err error, continuing bool, start, prefix string, rev int64) error {
	switch {
	case errors.Is(err, rpctypes.ErrCompacted):
		if !continuing {
			return apierrors.NewResourceExpired(expiredListMessage)
		}
		status := apierrors.NewResourceExpired(inconsistentContinueMsg)
		if next, encErr := encodeContinue(start, prefix, -1); encErr == nil {
			status.ErrStatus.ListMeta.Continue = next
		}
		return status
	case errors.Is(err, rpctypes.ErrFutureRev):
		return tooLargeRVError(rev, 0)
	}
	return s.etcdError("range", prefix, err)
}

// continueToken is upstream's continue token (base64url of this JSON).
type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

func encodeContinue(key, prefix string, rev int64) (string, error) {
	start := strings.TrimPrefix(key, prefix)
	if start == key {
		return "", apierrors.NewInternalError(fmt.Errorf("continue key %q is not under %q", key, prefix))
	}
	out, err := json.Marshal(&continueToken{APIVersion: "meta.k8s.io/v1", ResourceVersion: rev, StartKey: start})
	if err != nil {
		return "", apierrors.NewInternalError(err)
	}
	return base64.RawURLEncoding.EncodeToString(out), nil
}

// decodeContinue returns the start key (prefix + token start) and revision.
func decodeContinue(token, prefix string) (string, int64, error) {
	invalid := func(why string) (string, int64, error) {
		return "", 0, apierrors.NewBadRequest("invalid continue token: " + why)
	}
	data, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return invalid("not base64")
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return invalid("not JSON")
	}
	if c.APIVersion != "meta.k8s.io/v1" {
		return invalid(fmt.Sprintf("unsupported version %q", c.APIVersion))
	}
	if c.ResourceVersion == 0 || c.ResourceVersion < -1 {
		return invalid("incorrect encoded start resourceVersion")
	}
	if c.StartKey == "" {
		return invalid("no start key")
	}
	// The key must be a clean path so it stays inside prefix (no "..").
	key := c.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return invalid("start key is not a clean path")
	}
	return prefix + c.StartKey, c.ResourceVersion, nil
}

// parseRV parses a resourceVersion parameter.
func parseRV(rv string) (int64, error) {
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version %q", rv))
	}
	return n, nil
}

// tooLargeRVError is upstream's answer when a resourceVersion is ahead of
// what storage has seen: 504 with cause ResourceVersionTooLarge.
func tooLargeRVError(rv, current int64) error {
	err := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", rv, current), 1)
	err.ErrStatus.Details.Causes = []metav1.StatusCause{{
		Type:    metav1.CauseTypeResourceVersionTooLarge,
		Message: "Too large resource version",
	}}
	return err
}
