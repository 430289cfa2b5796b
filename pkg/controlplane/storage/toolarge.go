package storage

import (
	"errors"
	"net/http"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// isTooLarge is upstream's isTooLargeError (endpoints/handlers/patch.go):
// etcd refused the request's size, or the client refused to send it.
func isTooLarge(err error) bool {
	if errors.Is(err, rpctypes.ErrRequestTooLarge) {
		return true
	}
	if st, ok := status.FromError(err); ok {
		return st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "trying to send message larger than max")
	}
	return false
}

// tooLargeError is kube-apiserver's answer to an object etcd will not
// store: the etcd error as it is, a 500 with no reason (its
// ErrorToAPIStatus for an error that is not a Status; kubernetes#112152
// asks for a 4xx, still open), so that kubectl prints "Error from server:
// etcdserver: request is too large" as against upstream.
func tooLargeError(err error) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Message: err.Error(),
	}}
}
