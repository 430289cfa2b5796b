package apiserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"math/big"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

func groupResource(res *registry.Resource) schema.GroupResource {
	return schema.GroupResource{Group: res.GVK.Group, Resource: res.Plural}
}

// storedAs is the resource whose keys (and encryption) hold res's
// objects, and the conversion to its shape (nil: res's own).
func storedAs(res *registry.Resource) (schema.GroupResource, *storage.Conversion) {
	v := res.StoredAs
	if v == nil {
		return groupResource(res), nil
	}
	return v.Resource, &storage.Conversion{New: v.New, ToStored: v.ToStored, FromStored: v.FromStored}
}

// generateNameSuffix draws from upstream's alphabet (no vowels, no
// look-alike digits), 5 characters.
func generateNameSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		b[i] = alphabet[n.Int64()]
	}
	return string(b)
}

func (h *resourceHandler) create(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	if h.ri.Name != "" || h.ri.Subresource != "" {
		return h.createSubresource(ctx, w, r)
	}
	obj, err := h.decode(r)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if h.res.Virtual {
		return h.s.virtualCreate(ctx, w, r, h.res, obj) // reviews: computed, unnamed, not stored
	}
	if err := h.setNamespace(m); err != nil {
		return err
	}
	if m.GetResourceVersion() != "" {
		return responsewriters.BadRequest("resourceVersion should not be set on objects to be created")
	}
	m.SetUID(uuid.NewUUID())
	m.SetCreationTimestamp(metav1.Now())
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	if err := h.s.admitMutating(ctx, h.attrs(admissionv1.Create, obj, nil)); err != nil {
		return err
	}
	// As upstream, the name is drawn after admission (which reports the
	// generateName) and before validation.
	if m.GetName() == "" && m.GetGenerateName() != "" {
		m.SetName(m.GetGenerateName() + generateNameSuffix())
	}
	if m.GetName() == "" {
		return h.invalid("", field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if h.res.Default != nil {
		h.res.Default(obj)
	}
	if h.res.PrepareForCreate != nil {
		h.res.PrepareForCreate(obj)
	}
	if h.res.Validate != nil {
		if errs := h.res.Validate(obj); len(errs) > 0 {
			return h.invalid(m.GetName(), errs)
		}
	}
	if err := h.s.confirmNoEscalation(ctx, m.GetNamespace(), obj, nil); err != nil {
		return err
	}
	if err := h.s.admitValidating(ctx, h.attrs(admissionv1.Create, obj, nil)); err != nil {
		return err
	}
	var finish registry.FinishFunc
	if h.res.BeginCreate != nil {
		if finish, err = h.res.BeginCreate(ctx, obj, h.s.hookStorage()); err != nil {
			return err
		}
	}
	created, err := h.st.Create(ctx, obj, dryRun(r))
	if finish != nil {
		finish(ctx, err == nil)
	}
	if err != nil {
		return err
	}
	if !dryRun(r) {
		h.s.afterCreate(ctx, h.res, created)
	}
	h.s.writeObject(w, r, h.res, http.StatusCreated, created)
	return nil
}

func (h *resourceHandler) setNamespace(m metav1.Object) error {
	if !h.res.Namespaced {
		m.SetNamespace("")
		return nil
	}
	switch ns := m.GetNamespace(); {
	case ns == "":
		m.SetNamespace(h.ri.Namespace)
	case h.ri.Namespace != "" && ns != h.ri.Namespace:
		return responsewriters.BadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	if m.GetNamespace() == "" {
		return responsewriters.BadRequest("the namespace of the provided object is empty")
	}
	return nil
}

func (h *resourceHandler) update(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	if !wholeObjectSubresources[h.ri.Subresource] {
		return h.updateSubresource(ctx, w, r)
	}
	obj, err := h.decode(r)
	if err != nil {
		return err
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	if m.GetName() != h.ri.Name {
		return responsewriters.BadRequest("the name of the object (%s) does not match the name on the URL (%s)", m.GetName(), h.ri.Name)
	}
	if err := h.setNamespace(m); err != nil {
		return err
	}
	return h.applyUpdate(ctx, w, r, func(runtime.Object) (runtime.Object, error) { return obj.DeepCopyObject(), nil })
}

// applyUpdate runs the shared update path: the caller's change, the
// preconditions, mutating admission, preparation, validation, validating
// admission, and the removal of objects whose last finalizer went away.
func (h *resourceHandler) applyUpdate(ctx context.Context, w http.ResponseWriter, r *http.Request, change func(existing runtime.Object) (runtime.Object, error)) error {
	updated, err := h.st.Update(ctx, h.ri.Namespace, h.ri.Name, func(existing runtime.Object) (runtime.Object, error) {
		obj, err := change(existing)
		if err != nil {
			return nil, err
		}
		// A write based on a stale copy is a conflict before anything
		// else: a node's stale Node must not read as a taint change.
		if err := h.checkUpdatePreconditions(obj, existing); err != nil {
			return nil, err
		}
		if err := h.s.admitMutating(ctx, h.attrs(admissionv1.Update, obj, existing)); err != nil {
			return nil, err
		}
		if obj, err = h.prepareUpdate(obj, existing); err != nil {
			return nil, err
		}
		if err := h.s.confirmNoEscalation(ctx, h.ri.Namespace, obj, existing); err != nil {
			return nil, err
		}
		if err := h.s.admitValidating(ctx, h.attrs(admissionv1.Update, obj, existing)); err != nil {
			return nil, err
		}
		return obj, nil
	}, dryRun(r))
	if err != nil {
		return err
	}
	if done, err := h.s.finishDeletion(ctx, h, updated, dryRun(r)); err != nil || done != nil {
		if err != nil {
			return err
		}
		updated = done
	}
	h.s.writeObject(w, r, h.res, http.StatusOK, updated)
	return nil
}

// checkUpdatePreconditions: the update's resourceVersion and UID, when
// set, must be the stored object's.
func (h *resourceHandler) checkUpdatePreconditions(obj, existing runtime.Object) error {
	m, _ := meta.Accessor(obj)
	old, _ := meta.Accessor(existing)
	if rv := m.GetResourceVersion(); rv != "" && rv != old.GetResourceVersion() {
		return apierrors.NewConflict(groupResource(h.res), old.GetName(),
			errorString("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if uid := m.GetUID(); uid != "" && uid != old.GetUID() {
		return apierrors.NewConflict(groupResource(h.res), old.GetName(),
			errorString("Precondition failed: UID in precondition: "+string(old.GetUID())+", UID in object meta: "+string(uid)))
	}
	return nil
}

func (h *resourceHandler) prepareUpdate(obj, existing runtime.Object) (runtime.Object, error) {
	m, _ := meta.Accessor(obj)
	old, _ := meta.Accessor(existing)
	// Fields only the server sets.
	m.SetUID(old.GetUID())
	m.SetNamespace(old.GetNamespace())
	m.SetCreationTimestamp(old.GetCreationTimestamp())
	m.SetDeletionTimestamp(old.GetDeletionTimestamp())
	m.SetDeletionGracePeriodSeconds(old.GetDeletionGracePeriodSeconds())
	m.SetGeneration(old.GetGeneration())
	m.SetResourceVersion(old.GetResourceVersion()) // validation wants it; storage drops it
	if h.res.Default != nil {
		h.res.Default(obj)
	}
	prepare, validate := h.updateHooks()
	if prepare != nil {
		prepare(obj, existing)
	}
	var errs field.ErrorList
	for _, check := range validate {
		errs = append(errs, check(obj, existing)...)
	}
	if len(errs) > 0 {
		return nil, h.invalid(old.GetName(), errs)
	}
	return obj, nil
}

type errorString string

func (e errorString) Error() string { return string(e) }

func (h *resourceHandler) patch(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	if !wholeObjectSubresources[h.ri.Subresource] {
		return h.updateSubresource(ctx, w, r)
	}
	// As upstream, the patch type is checked before the body is read.
	pt := patchTypeOf(r)
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType:
	default:
		return apierrors.NewGenericServerResponse(http.StatusUnsupportedMediaType, "patch", groupResource(h.res), h.ri.Name,
			"the server does not support the patch type "+string(pt), 0, false)
	}
	body, err := readLimitedBody(r)
	if err != nil {
		return err
	}
	return h.applyUpdate(ctx, w, r, func(existing runtime.Object) (runtime.Object, error) {
		setKind(existing, h.res.GVK)
		cur, err := json.Marshal(existing)
		if err != nil {
			return nil, err
		}
		patched, err := applyPatch(pt, cur, body, h.res.New())
		if err != nil {
			return nil, err
		}
		obj, err := h.decodeBytes("application/json", patched)
		if err != nil {
			return nil, err
		}
		// A resourceVersion in the patch is a precondition; none means
		// "the current one".
		m, _ := meta.Accessor(obj)
		if m.GetResourceVersion() == "" {
			old, _ := meta.Accessor(existing)
			m.SetResourceVersion(old.GetResourceVersion())
		}
		return obj, nil
	})
}

// deleteOptions reads DeleteOptions from the body or the query.
func deleteOptions(r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := readLimitedBody(r)
	if err != nil {
		return nil, err
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := decodeInto(r.Header.Get("Content-Type"), body, opts); err != nil {
			return nil, responsewriters.BadRequest("invalid DeleteOptions: %v", err)
		}
	}
	q := r.URL.Query()
	if g := q.Get("gracePeriodSeconds"); g != "" && opts.GracePeriodSeconds == nil {
		var n int64
		if err := json.Unmarshal([]byte(g), &n); err != nil {
			return nil, responsewriters.BadRequest("invalid gracePeriodSeconds %q", g)
		}
		opts.GracePeriodSeconds = &n
	}
	if p := q.Get("propagationPolicy"); p != "" && opts.PropagationPolicy == nil {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	if dryRun(r) {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return opts, nil
}

func (h *resourceHandler) delete(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	obj, err := h.s.deleteObject(ctx, h, h.ri.Namespace, h.ri.Name, opts)
	if err != nil {
		return err
	}
	h.s.writeObject(w, r, h.res, http.StatusOK, obj)
	return nil
}

func (h *resourceHandler) deleteCollection(ctx context.Context, w http.ResponseWriter, r *http.Request) error {
	opts, err := deleteOptions(r)
	if err != nil {
		return err
	}
	filter, err := h.selectors(r)
	if err != nil {
		return err
	}
	list, err := h.st.List(ctx, h.ri.Namespace, storageListAll(filter))
	if err != nil {
		return err
	}
	var deleted []runtime.Object
	for _, it := range list.Items {
		m, _ := meta.Accessor(it)
		obj, err := h.s.deleteObject(ctx, h, m.GetNamespace(), m.GetName(), opts)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		if obj != nil {
			setKind(obj, h.res.GVK)
			deleted = append(deleted, obj)
		}
	}
	out, err := listObject(h.res, deleted, list.ResourceVersion, "", nil)
	if err != nil {
		return err
	}
	responsewriters.WriteJSON(w, http.StatusOK, out)
	return nil
}
