package tokens_test

import (
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
)

func TestNewClaimsAndBindPod(t *testing.T) {
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid"}}
	now := time.Unix(1700000000, 0)
	c := tokens.NewClaims(sa, []string{"api"}, now, time.Hour, "jti")
	if c.Subject != "system:serviceaccount:ns:sa" || c.ID != "jti" || len(c.Audience) != 1 || c.Audience[0] != "api" ||
		!c.ExpiresAt.Equal(now.Add(time.Hour)) || !c.IssuedAt.Equal(now) || !c.NotBefore.Equal(now) ||
		c.Kubernetes.Namespace != "ns" || c.Kubernetes.ServiceAccount != (tokens.ObjectRef{Name: "sa", UID: "sa-uid"}) {
		t.Errorf("claims %+v", c)
	}
	c.BindPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p-uid"}}, "")
	if *c.Kubernetes.Pod != (tokens.ObjectRef{Name: "p", UID: "p-uid"}) || c.Kubernetes.Node != nil {
		t.Errorf("unscheduled pod: %+v %+v", c.Kubernetes.Pod, c.Kubernetes.Node)
	}
	c.BindPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p-uid"}, Spec: v1.PodSpec{NodeName: "n"}}, "n-uid")
	if *c.Kubernetes.Node != (tokens.ObjectRef{Name: "n", UID: "n-uid"}) {
		t.Errorf("node: %+v", c.Kubernetes.Node)
	}
}

func TestLiveUID(t *testing.T) {
	recently, longAgo := metav1.NewTime(time.Now().Add(-10*time.Second)), metav1.NewTime(time.Now().Add(-2*time.Minute))
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p-uid"}}
	if uid, err := tokens.LiveUID("pod", pod); err != nil || uid != "p-uid" {
		t.Errorf("live pod: %q %v", uid, err)
	}
	pod.DeletionTimestamp = &recently
	if uid, err := tokens.LiveUID("pod", pod); err != nil || uid != "p-uid" {
		t.Errorf("pod deleting for 10s: %q %v", uid, err)
	}
	pod.DeletionTimestamp = &longAgo
	if _, err := tokens.LiveUID("pod", pod); err == nil || err.Error() != "pod ns/p has been deleted" {
		t.Errorf("pod deleting for 2m: %v", err)
	}
}

func TestValidateTokenRequest(t *testing.T) {
	for exp, valid := range map[int64]bool{599: false, 600: true, tokens.DefaultExpirationSeconds: true, 1 << 32: true, 1<<32 + 1: false} {
		req := &authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}
		if errs := tokens.ValidateTokenRequest(req); (len(errs) == 0) != valid {
			t.Errorf("expirationSeconds %d: %v", exp, errs)
		}
	}
}
