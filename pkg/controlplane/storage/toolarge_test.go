package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTooLargeIsUpstreamsAnswer(t *testing.T) {
	s := &Store{}
	for _, tc := range []struct {
		err         error
		wantMessage string
	}{
		{rpctypes.ErrRequestTooLarge, "etcdserver: request is too large"},
		{fmt.Errorf("txn: %w", rpctypes.ErrRequestTooLarge), "txn: etcdserver: request is too large"},
		{status.Error(codes.ResourceExhausted, "trying to send message larger than max (2200000 vs. 2097152)"),
			"rpc error: code = ResourceExhausted desc = trying to send message larger than max (2200000 vs. 2097152)"},
	} {
		err := s.etcdError("create", "/registry/configmaps/ns/c", tc.err)
		var st apierrors.APIStatus
		if !errors.As(err, &st) {
			t.Fatalf("%v: not a Status: %v", tc.err, err)
		}
		got := st.Status()
		if got.Code != http.StatusInternalServerError || got.Reason != metav1.StatusReasonUnknown || got.Message != tc.wantMessage {
			t.Errorf("%v: %d %q %q, want 500, no reason, %q", tc.err, got.Code, got.Reason, got.Message, tc.wantMessage)
		}
	}
	// Other failures keep their context.
	if err := s.etcdError("create", "k", errors.New("boom")); !apierrors.IsInternalError(err) {
		t.Errorf("other etcd error: %v", err)
	}
	if err := s.etcdError("create", "k", context.DeadlineExceeded); !apierrors.IsTimeout(err) {
		t.Errorf("deadline: %v", err)
	}
}
