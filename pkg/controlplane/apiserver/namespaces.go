package apiserver

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// purgeInterval is how often a terminating namespace is emptied again.
const purgeInterval = 2 * time.Second

// purgeNamespaceLater empties a terminating namespace in the background
// and removes it once nothing is left: the namespace controller's work,
// done here until the controllers exist. Bound pods are deleted
// gracefully, so the namespace waits for their nodes.
func (s *Server) purgeNamespaceLater(name string) {
	s.purgeMu.Lock()
	defer s.purgeMu.Unlock()
	if s.purging[name] || s.ctx == nil {
		return
	}
	s.purging[name] = true
	go func() {
		defer func() {
			s.purgeMu.Lock()
			delete(s.purging, name)
			s.purgeMu.Unlock()
		}()
		for {
			left, err := s.purgeNamespace(s.ctx, name)
			if err != nil {
				s.cfg.Logger.Warn("purge namespace", "namespace", name, "err", err)
			}
			if err == nil && left == 0 {
				ctx, cancel := context.WithTimeout(s.ctx, requestTimeout)
				_, err := s.store(nsResource).Delete(ctx, "", name, nil, false)
				cancel()
				if err == nil || apierrors.IsNotFound(err) {
					return
				}
			}
			select {
			case <-s.ctx.Done():
				return
			case <-time.After(purgeInterval):
			}
		}
	}()
}

// purgeNamespace deletes every object in the namespace and reports how
// many are still there.
func (s *Server) purgeNamespace(ctx context.Context, ns string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	left := 0
	for res, st := range s.stores {
		// A resource stored as another is emptied through that one.
		if !res.Namespaced || res.StoredAs != nil {
			continue
		}
		list, err := st.List(ctx, ns, storageListAll(nil))
		if err != nil {
			return left, err
		}
		h := &resourceHandler{s: s, res: res, st: st, ri: request.Info{Namespace: ns}}
		for _, obj := range list.Items {
			m, _ := meta.Accessor(obj)
			left++
			if m.GetDeletionTimestamp() != nil {
				continue
			}
			if _, err := s.deleteObject(ctx, h, ns, m.GetName(), &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return left, err
			}
		}
	}
	return left, nil
}
