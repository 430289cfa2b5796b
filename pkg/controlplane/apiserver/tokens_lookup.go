package apiserver

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletedGrace is how long a token stays valid after its service account
// or pod began deleting (upstream's validator allows 60s).
const deletedGrace = 60 * time.Second

// LookupServiceAccount returns the UID of a service account, for the
// authentication of its tokens; an error when it does not exist (or has
// been deleting for a while).
func (s *Server) LookupServiceAccount(ctx context.Context, ns, name string) (string, error) {
	obj, err := s.store(saResource).Get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	sa := obj.(*v1.ServiceAccount)
	if deletedLongAgo(sa.DeletionTimestamp) {
		return "", fmt.Errorf("service account %s/%s has been deleted", ns, name)
	}
	return string(sa.UID), nil
}

// LookupPod returns the UID of a pod a token is bound to; an error when it
// does not exist (or has been deleting for a while).
func (s *Server) LookupPod(ctx context.Context, ns, name string) (string, error) {
	obj, err := s.store("/v1/pods").Get(ctx, ns, name)
	if err != nil {
		return "", err
	}
	pod := obj.(*v1.Pod)
	if deletedLongAgo(pod.DeletionTimestamp) {
		return "", fmt.Errorf("pod %s/%s has been deleted", ns, name)
	}
	return string(pod.UID), nil
}

func deletedLongAgo(t *metav1.Time) bool {
	return t != nil && t.Time.Before(time.Now().Add(-deletedGrace))
}
