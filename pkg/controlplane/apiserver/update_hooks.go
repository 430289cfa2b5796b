package apiserver

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// wholeObjectSubresources take the resource's own object in PUT and PATCH
// and share the main resource's update path; the registry's hooks for the
// subresource keep what it may not change (status: the spec;
// ephemeralcontainers: all but spec.ephemeralContainers; approval: all but
// the Approved and Denied conditions).
var wholeObjectSubresources = map[string]bool{"": true, "status": true, "ephemeralcontainers": true, "resize": true, "approval": true}

// updateHooks picks the registry hooks an update through h's subresource
// runs after defaulting: the preparation (nil for none) and the checks.
func (h *resourceHandler) updateHooks() (prepare func(obj, old runtime.Object), validate []func(obj, old runtime.Object) field.ErrorList) {
	res := h.res
	switch h.ri.Subresource {
	case "ephemeralcontainers":
		// Only the strategy's own check: the general pod update check
		// forbids any spec change, ephemeral containers included.
		return res.PrepareForEphemeralContainersUpdate, nonNil(res.ValidateEphemeralContainersUpdate)
	case "resize":
		// Only the resize check, as upstream's podResizeStrategy: the
		// general pod update check forbids resource changes.
		return res.PrepareForResizeUpdate, nonNil(res.ValidateResizeUpdate)
	case "approval":
		return res.PrepareForApprovalUpdate, nonNil(res.ValidateApprovalUpdate)
	case "status":
		// The status strategy's own check, as upstream's status
		// strategies; resources without one fall back to the update check.
		if res.ValidateStatusUpdate != nil {
			return res.PrepareForStatusUpdate, nonNil(res.ValidateStatusUpdate)
		}
		return res.PrepareForStatusUpdate, nonNil(res.ValidateUpdate)
	case "":
		var create func(obj, old runtime.Object) field.ErrorList
		if res.Validate != nil {
			create = func(obj, _ runtime.Object) field.ErrorList { return res.Validate(obj) }
		}
		return res.PrepareForUpdate, nonNil(create, res.ValidateUpdate)
	}
	return nil, nonNil(res.ValidateUpdate)
}

// nonNil drops the checks a resource does not set.
func nonNil(fs ...func(obj, old runtime.Object) field.ErrorList) []func(obj, old runtime.Object) field.ErrorList {
	var out []func(obj, old runtime.Object) field.ErrorList
	for _, f := range fs {
		if f != nil {
			out = append(out, f)
		}
	}
	return out
}
