package apiserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// requestTimeout bounds one non-watch request.
const requestTimeout = 60 * time.Second

// resourceHandler serves one resource request.
type resourceHandler struct {
	s   *Server
	res *registry.Resource
	st  *storage.Store
	ri  request.Info
}

func (h *resourceHandler) serve(w http.ResponseWriter, r *http.Request) {
	if h.isConnect() {
		h.connect(w, r)
		return
	}
	if h.ri.Verb == "watch" {
		h.watch(w, r)
		return
	}
	if err := h.checkFieldValidation(w, r); err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	var err error
	switch h.ri.Verb {
	case "get":
		err = h.getSubresource(ctx, w, r)
	case "list":
		err = h.list(ctx, w, r)
	case "create":
		err = h.create(ctx, w, r)
	case "update":
		err = h.update(ctx, w, r)
	case "patch":
		err = h.patch(ctx, w, r)
	case "delete":
		err = h.delete(ctx, w, r)
	case "deletecollection":
		err = h.deleteCollection(ctx, w, r)
	default:
		err = responsewriters.MethodNotSupported(groupResource(h.res), h.ri.Verb)
	}
	if err != nil {
		responsewriters.WriteError(w, err)
	}
}

func (h *resourceHandler) get(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	obj, err := h.st.Get(ctx, h.ri.Namespace, h.ri.Name)
	if err != nil {
		return err
	}
	h.s.writeObject(w, r, h.res, http.StatusOK, obj)
	return nil
}

// selectors turns labelSelector and fieldSelector into a storage filter.
func (h *resourceHandler) selectors(r *http.Request) (func(runtime.Object) bool, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return nil, responsewriters.BadRequest("unable to parse requirement: %v", err)
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return nil, responsewriters.BadRequest("invalid field selector: %v", err)
	}
	for _, req := range fs.Requirements() {
		if _, ok := h.fieldSet(nil)[req.Field]; !ok && !h.knownField(req.Field) {
			return nil, responsewriters.BadRequest("field label not supported: %s", req.Field)
		}
	}
	if ls.Empty() && fs.Empty() {
		return nil, nil
	}
	return func(obj runtime.Object) bool {
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		return ls.Matches(labels.Set(m.GetLabels())) && fs.Matches(h.fieldSet(obj))
	}, nil
}

// fieldSet is the object's field selector attributes; with a nil object it
// lists the supported field names (values empty).
func (h *resourceHandler) fieldSet(obj runtime.Object) fields.Set {
	set := fields.Set{"metadata.name": ""}
	if h.res.Namespaced {
		set["metadata.namespace"] = ""
	}
	if obj == nil {
		return set
	}
	if m, err := meta.Accessor(obj); err == nil {
		set["metadata.name"] = m.GetName()
		if h.res.Namespaced {
			set["metadata.namespace"] = m.GetNamespace()
		}
	}
	if h.res.FieldSet != nil {
		for k, v := range h.res.FieldSet(obj) {
			set[k] = v
		}
	}
	return set
}

func (h *resourceHandler) knownField(name string) bool {
	if h.res.FieldSet == nil {
		return false
	}
	_, ok := h.res.FieldSet(h.res.New())[name]
	return ok
}

func (h *resourceHandler) list(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	filter, err := h.selectors(r)
	if err != nil {
		return err
	}
	var limit int64
	if l := q.Get("limit"); l != "" {
		if limit, err = strconv.ParseInt(l, 10, 64); err != nil || limit < 0 {
			return responsewriters.BadRequest("invalid limit %q", l)
		}
	}
	res, err := h.st.List(ctx, h.ri.Namespace, storage.ListOptions{
		ResourceVersion:      q.Get("resourceVersion"),
		ResourceVersionMatch: q.Get("resourceVersionMatch"),
		Limit:                limit,
		Continue:             q.Get("continue"),
		Filter:               filter,
	})
	if err != nil {
		return err
	}
	if wantsTable(r) && h.res.Table != nil {
		lm := &metav1.ListMeta{ResourceVersion: res.ResourceVersion, Continue: res.Continue, RemainingItemCount: res.RemainingItemCount}
		responsewriters.WriteJSON(w, http.StatusOK, h.s.table(r, h.res, res.Items, lm))
		return nil
	}
	for _, it := range res.Items {
		setKind(it, h.res.GVK)
	}
	list, err := listObject(h.res, res.Items, res.ResourceVersion, res.Continue, res.RemainingItemCount)
	if err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusOK, list)
	return nil
}

// decode reads the request body into a new object of the resource's type
// and checks its kind.
func (h *resourceHandler) decode(r *http.Request) (runtime.Object, error) {
	body, err := readLimitedBody(r)
	if err != nil {
		return nil, err
	}
	return h.decodeBytes(r.Header.Get("Content-Type"), body)
}

func (h *resourceHandler) decodeBytes(contentType string, body []byte) (runtime.Object, error) {
	obj := h.res.New()
	if err := decodeInto(contentType, body, obj); err != nil {
		return nil, responsewriters.BadRequest("the object provided is unrecognized or invalid: %v", err)
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind != "" && (gvk.Kind != h.res.GVK.Kind || gvk.GroupVersion() != h.res.GVK.GroupVersion()) {
		return nil, responsewriters.BadRequest("the API version in the data (%s) does not match the expected API version (%s)", gvk.GroupVersion(), h.res.GVK.GroupVersion())
	}
	return obj, nil
}

func dryRun(r *http.Request) bool {
	for _, v := range r.URL.Query()["dryRun"] {
		if v == metav1.DryRunAll {
			return true
		}
	}
	return false
}

func (h *resourceHandler) invalid(name string, errs field.ErrorList) error {
	return apierrors.NewInvalid(h.res.GVK.GroupKind(), name, errs)
}

// nameFilter narrows a filter to one object name (a watch on a named URL).
func nameFilter(name string, next func(runtime.Object) bool) func(runtime.Object) bool {
	return func(obj runtime.Object) bool {
		m, err := meta.Accessor(obj)
		if err != nil || m.GetName() != name {
			return false
		}
		return next == nil || next(obj)
	}
}
