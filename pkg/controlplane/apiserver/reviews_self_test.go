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
	// Without bindings: the self reviews every user may create.
	if len(rr.Status.ResourceRules) != 2 || len(rr.Status.NonResourceRules) != 0 || rr.Status.Incomplete || rr.Status.EvaluationError != "" {
		t.Errorf("bob's rules: %+v", rr.Status)
	}

	rec = serveAs(t, request.User{Name: "admin", Groups: []string{"system:masters"}}, http.MethodPost, rules, `{"spec":{"namespace":"default"}}`)
	_ = json.Unmarshal(rec.Body.Bytes(), &rr)
	if len(rr.Status.NonResourceRules) != 1 || rr.Status.NonResourceRules[0].NonResourceURLs[0] != "*" || rr.Status.ResourceRules[0].Resources[0] != "*" {
		t.Errorf("masters' rules: %+v", rr.Status)
	}

	rec = serveAs(t, bob, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`)
	var sr authnv1.SelfSubjectReview
	if err := json.Unmarshal(rec.Body.Bytes(), &sr); err != nil || rec.Code != http.StatusCreated ||
		sr.Status.UserInfo.Username != "bob" || strings.Join(sr.Status.UserInfo.Groups, ",") != "devs,system:authenticated" || sr.CreationTimestamp.IsZero() {
		t.Errorf("self subject review: %d %s", rec.Code, rec.Body)
	}
}
