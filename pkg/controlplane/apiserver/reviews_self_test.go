package apiserver

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

func TestSelfReviews(t *testing.T) {
	bob := request.User{Name: "bob", Groups: []string{"devs", "system:authenticated"}}
	const rules = "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews"

	rec := serveAs(t, bob, http.MethodPost, rules, `{"spec":{}}`)
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `"message":"no namespace on request"`) {
		t.Errorf("rules review without a namespace: %d %s", rec.Code, rec.Body)
	}
	rec = serveAs(t, bob, http.MethodPost, rules, `{"spec":{"namespace":"default"}}`)
	var rr authzv1.SelfSubjectRulesReview
	if err := json.Unmarshal(rec.Body.Bytes(), &rr); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("rules review: %d %s", rec.Code, rec.Body)
	}
	// Without bindings of its own: what the bootstrap policy binds to
	// system:authenticated (system:basic-user's self reviews,
	// system:discovery's and system:public-info-viewer's paths), each
	// once.
	if len(rr.Status.ResourceRules) != 2 || len(rr.Status.NonResourceRules) != 2 || rr.Status.Incomplete || rr.Status.EvaluationError != "" {
		t.Errorf("bob's rules: %+v", rr.Status)
	}

	// Masters: cluster-admin's, through its binding (the privileged
	// group's link lists none, as upstream's), and the same defaults.
	rec = serveAs(t, request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}, http.MethodPost, rules, `{"spec":{"namespace":"default"}}`)
	_ = json.Unmarshal(rec.Body.Bytes(), &rr)
	if len(rr.Status.NonResourceRules) != 3 || rr.Status.NonResourceRules[0].NonResourceURLs[0] != "*" ||
		len(rr.Status.ResourceRules) != 3 || rr.Status.ResourceRules[0].Resources[0] != "*" {
		t.Errorf("masters' rules: %+v", rr.Status)
	}

	rec = serveAs(t, bob, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`)
	var sr authnv1.SelfSubjectReview
	if err := json.Unmarshal(rec.Body.Bytes(), &sr); err != nil || rec.Code != http.StatusCreated ||
		sr.Status.UserInfo.Username != "bob" || strings.Join(sr.Status.UserInfo.Groups, ",") != "devs,system:authenticated" || sr.CreationTimestamp.IsZero() {
		t.Errorf("self subject review: %d %s", rec.Code, rec.Body)
	}

	// A service account token's user: its UID and extra, as upstream.
	sa := request.User{Name: "system:serviceaccount:ns:sa", UID: "u-1", Groups: []string{"system:authenticated"},
		Extra: map[string][]string{"authentication.kubernetes.io/credential-id": {"JTI=j-1"}}}
	rec = serveAs(t, sa, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`)
	sr = authnv1.SelfSubjectReview{}
	if err := json.Unmarshal(rec.Body.Bytes(), &sr); err != nil || sr.Status.UserInfo.UID != "u-1" ||
		strings.Join(sr.Status.UserInfo.Extra["authentication.kubernetes.io/credential-id"], ",") != "JTI=j-1" {
		t.Errorf("self subject review of a token user: %d %s", rec.Code, rec.Body)
	}
}
