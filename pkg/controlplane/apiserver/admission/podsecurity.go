package admission

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

// PodSecurity is upstream's plugin of that name, a validating one: it
// runs upstream's PodSecurity admission library (the one the built-in
// kube-apiserver plugin delegates to).
type PodSecurity struct {
	lib *psadmission.Admission
}

var _ ValidationInterface = (*PodSecurity)(nil)

// Name is the plugin's upstream name.
func (*PodSecurity) Name() string { return PodSecurityName }

// Handles: creates and updates.
func (*PodSecurity) Handles(op admissionv1.Operation) bool {
	return op == admissionv1.Create || op == admissionv1.Update
}

// NewPodSecurity builds the plugin on upstream's library with the default
// configuration: privileged unless namespace labels say otherwise, no
// exemptions. Pods are enforced; workload resources (deployments, replica
// sets) only get warnings, and namespace label changes are validated and
// checked against the namespace's pods.
func NewPodSecurity(namespaces NamespaceGetter, pods PodLister) (*PodSecurity, error) {
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
		NamespaceGetter:  namespaces,
		PodLister:        pods,
	}
	if err := a.CompleteConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	if err := a.ValidateConfiguration(); err != nil {
		return nil, fmt.Errorf("pod security: %w", err)
	}
	return &PodSecurity{lib: a}, nil
}

// Validate is the built-in plugin's Validate: namespaces, pods and
// resources with a pod template; warnings go to the Warning header.
func (p *PodSecurity) Validate(ctx context.Context, a *Attributes) error {
	gr := a.GroupResource()
	if gr != v1.Resource("pods") && gr != v1.Resource("namespaces") && !p.lib.PodSpecExtractor.HasPodSpec(gr) {
		return nil
	}
	user, _ := request.UserFrom(ctx)
	name := a.ObjectName()
	resp := p.lib.Validate(ctx, &psapi.AttributesRecord{
		Name: name, Namespace: a.Namespace, Kind: a.Resource.GVK, Resource: a.Resource.GroupVersionResource(),
		Subresource: a.Subresource, Operation: a.Operation, Object: a.Object, OldObject: a.OldObject, Username: user.Name,
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

// noPodSecurityMetrics drops the library's evaluation counters: the API
// server exports no metrics yet.
type noPodSecurityMetrics struct{}

func (noPodSecurityMetrics) RecordEvaluation(psmetrics.Decision, psapi.LevelVersion, psmetrics.Mode, psapi.Attributes) {
}
func (noPodSecurityMetrics) RecordExemption(psapi.Attributes)   {}
func (noPodSecurityMetrics) RecordError(bool, psapi.Attributes) {}
