package apiserver

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	psadmission "k8s.io/pod-security-admission/admission"
	psload "k8s.io/pod-security-admission/admission/api/load"
	psapi "k8s.io/pod-security-admission/api"
	psmetrics "k8s.io/pod-security-admission/metrics"
	pspolicy "k8s.io/pod-security-admission/policy"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
)

// newPodSecurity builds upstream's PodSecurity admission (the library the
// built-in kube-apiserver plugin delegates to) with the default
// configuration: privileged unless namespace labels say otherwise, no
// exemptions. Pods are enforced; workload resources (deployments, replica
// sets) only get warnings, and namespace label changes are validated and
// checked against the namespace's pods.
func newPodSecurity(s *Server) (*psadmission.Admission, error) {
	cfg, err := psload.LoadFromData(nil)
	if err != nil {
		return nil, fmt.Errorf("pod security configuration: %w", err)
	}
	evaluator, err := pspolicy.NewEvaluator(pspolicy.DefaultChecks(), nil)
	if err != nil {
		return nil, fmt.Errorf("pod security checks: %w", err)
	}
	a := &psadmission.Admission{
		Configuration:    cfg,
		Evaluator:        evaluator,
		Metrics:          noPodSecurityMetrics{},
		PodSpecExtractor: psadmission.DefaultPodSpecExtractor{},
		NamespaceGetter:  podSecurityNamespaces{s},
		PodLister:        storeReaders{s},
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	return a, nil
}

// checkPodSecurity is the built-in plugin's Validate: namespaces, pods and
// resources with a pod template; warnings go to the Warning header.
func (s *Server) checkPodSecurity(ctx context.Context, a *attributes) error {
	gr := groupResource(a.res)
	if gr != v1.Resource("pods") && gr != v1.Resource("namespaces") && !s.podSecurity.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	user, _ := request.UserFrom(ctx)
	name := a.objectName()
	resp := s.podSecurity.Validate(ctx, &psapi.AttributesRecord{
		Name: name, Namespace: a.namespace, Kind: a.res.GVK, Resource: a.res.GroupVersionResource(),
		Subresource: a.subresource, Operation: a.op, Object: a.obj, OldObject: a.old, Username: user.Name,
	})
	for _, w := range resp.Warnings {
		request.AddWarning(ctx, w)
	}
	if resp.Allowed {
		return nil
	}
	return podSecurityError(gr, name, resp)
}

// podSecurityError is a 403 "Not allowed by PodSecurity" unless the
// library's result says more (its message, reason, details, code), as the
// built-in plugin answers.
func podSecurityError(gr schema.GroupResource, name string, resp *admissionv1.AdmissionResponse) error {
	err := apierrors.NewForbidden(gr, name, errors.New("Not allowed by PodSecurity"))
	r := resp.Result
	if r == nil {
		return err
	}
	if r.Message != "" {
		err.ErrStatus.Message = r.Message
	}
	if r.Reason != "" {
		err.ErrStatus.Reason = r.Reason
	}
	if r.Details != nil {
		err.ErrStatus.Details = r.Details
	}
	if r.Code != 0 {
		err.ErrStatus.Code = r.Code
	}
	return err
}

// podSecurityNamespaces reads namespaces for the library: the watch cache,
// then etcd for one created a moment ago.
type podSecurityNamespaces struct{ s *Server }

func (n podSecurityNamespaces) GetNamespace(ctx context.Context, name string) (*v1.Namespace, error) {
	return n.s.getNamespace(ctx, name)
}

// noPodSecurityMetrics drops the library's evaluation counters: the API
// server exports no metrics yet.
type noPodSecurityMetrics struct{}

func (noPodSecurityMetrics) RecordEvaluation(psmetrics.Decision, psapi.LevelVersion, psmetrics.Mode, psapi.Attributes) {
}
func (noPodSecurityMetrics) RecordExemption(psapi.Attributes)   {}
func (noPodSecurityMetrics) RecordError(bool, psapi.Attributes) {}
