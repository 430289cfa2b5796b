package server

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

type fakeSecrets map[string]*v1.Secret

func (f fakeSecrets) LookupSecret(_ context.Context, ns, name string) (*v1.Secret, error) {
	if s, ok := f[ns+"/"+name]; ok {
		return s, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, name)
}

func bootstrapSecret(id, secret string, mutate func(map[string]string)) *v1.Secret {
	data := map[string]string{
		"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
		"expiration": "2030-01-02T03:04:05Z",
	}
	if mutate != nil {
		mutate(data)
	}
	s := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id, Namespace: "kube-system"},
		Type:       "bootstrap.kubernetes.io/token", Data: map[string][]byte{},
	}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return s
}

func TestBootstrapToken(t *testing.T) {
	now := time.Date(2029, 6, 1, 0, 0, 0, 0, time.UTC)
	const secret = "0123456789abcdef"
	secrets := fakeSecrets{}
	add := func(id string, mutate func(map[string]string)) {
		secrets["kube-system/bootstrap-token-"+id] = bootstrapSecret(id, secret, mutate)
	}
	add("abcdef", nil)
	add("extra1", func(d map[string]string) {
		d["auth-extra-groups"] = "system:bootstrappers:nodeagent:default-node-token, system:bootstrappers:x"
	})
	add("badgrp", func(d map[string]string) { d["auth-extra-groups"] = "system:masters" })
	add("expird", func(d map[string]string) { d["expiration"] = "2029-05-31T23:59:59Z" })
	add("nowexp", func(d map[string]string) { d["expiration"] = now.Format(time.RFC3339) })
	add("badexp", func(d map[string]string) { d["expiration"] = "tomorrow" })
	add("noexpi", func(d map[string]string) { delete(d, "expiration") })
	add("nouse1", func(d map[string]string) { delete(d, "usage-bootstrap-authentication") })
	add("nouse2", func(d map[string]string) { d["usage-bootstrap-authentication"] = "false" })
	add("wrngid", func(d map[string]string) { d["token-id"] = "abcdef" })
	secrets["kube-system/bootstrap-token-wrtype"] = bootstrapSecret("wrtype", secret, nil)
	secrets["kube-system/bootstrap-token-wrtype"].Type = v1.SecretTypeOpaque
	secrets["kube-system/bootstrap-token-delete"] = bootstrapSecret("delete", secret, nil)
	secrets["kube-system/bootstrap-token-delete"].DeletionTimestamp = &metav1.Time{Time: now}
	secrets["default/bootstrap-token-othrns"] = bootstrapSecret("othrns", secret, nil)

	a := &bootstrapTokenAuthenticator{lookup: secrets, now: func() time.Time { return now }, log: slog.New(slog.DiscardHandler)}
	for _, c := range []struct {
		token  string
		groups []string // nil: refused
		errHas string
	}{
		{"abcdef." + secret, []string{"system:bootstrappers"}, ""},
		{"extra1." + secret, []string{"system:bootstrappers", "system:bootstrappers:nodeagent:default-node-token", "system:bootstrappers:x"}, ""},
		{"noexpi." + secret, []string{"system:bootstrappers"}, ""},
		{"abcdef.0123456789abcdeX", nil, ""}, // wrong secret
		{"abcdef.0123456789abcde", nil, ""},  // malformed: short secret
		{"ABCDEF." + secret, nil, ""},        // malformed: upper case
		{"abcdef" + secret, nil, ""},         // malformed: no dot
		{"zzzzzz." + secret, nil, ""},        // no secret
		{"othrns." + secret, nil, ""},        // not in kube-system
		{"badgrp." + secret, nil, `bootstrap group "system:masters" is invalid`},
		{"expird." + secret, nil, ""},
		{"nowexp." + secret, nil, ""},
		{"badexp." + secret, nil, ""},
		{"nouse1." + secret, nil, ""},
		{"nouse2." + secret, nil, ""},
		{"wrngid." + secret, nil, ""},
		{"wrtype." + secret, nil, ""},
		{"delete." + secret, nil, ""},
	} {
		res, ok, err := a.authenticate(t.Context(), c.token)
		switch {
		case c.errHas != "" && (err == nil || !strings.Contains(err.Error(), c.errHas)):
			t.Errorf("%s: err %v, want %q", c.token, err, c.errHas)
		case c.errHas == "" && err != nil:
			t.Errorf("%s: %v", c.token, err)
		case ok != (c.groups != nil):
			t.Errorf("%s: ok %v", c.token, ok)
		case ok && (res.User.Name != "system:bootstrap:"+c.token[:6] || !slices.Equal(res.User.Groups, c.groups)):
			t.Errorf("%s: user %+v, want groups %v", c.token, res.User, c.groups)
		}
	}

	// In the chain: system:authenticated added, the API's audiences.
	chain := &tokenAuthenticator{bootstrap: a, apiAudiences: []string{"https://kubernetes.default.svc"}}
	res, ok, err := chain.authenticateToken(t.Context(), "abcdef."+secret, nil)
	if !ok || err != nil || !slices.Equal(res.User.Groups, []string{"system:bootstrappers", groupAuthenticated}) ||
		!slices.Equal(res.Audiences, []string{"https://kubernetes.default.svc"}) {
		t.Errorf("chain: %+v %v %v", res, ok, err)
	}
	if _, ok, _ := chain.authenticateToken(t.Context(), "abcdef."+secret, []string{"other"}); ok {
		t.Error("chain: valid for another audience")
	}
	if _, ok, err := chain.authenticateToken(t.Context(), "expird."+secret, nil); ok || err == nil {
		t.Errorf("chain: expired token ok=%v err=%v", ok, err)
	}
}
