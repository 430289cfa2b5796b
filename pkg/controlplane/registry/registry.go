package registry

import (
	"context"
	"slices"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry/allocator"
)

// Resource describes one served resource and its per-resource behaviour.
type Resource struct {
	GVK          schema.GroupVersionKind
	Plural       string
	Singular     string
	ShortNames   []string
	Categories   []string
	Namespaced   bool
	Verbs        []string // discovery verbs
	Subresources []string // "status", "scale", "log" ...; see SubresourceVerbs
	// Virtual resources (reviews) are create-only and never stored: the
	// HTTP layer computes the response from the request.
	Virtual bool

	New     func() runtime.Object
	NewList func() runtime.Object
	// StoredAs, when set, keeps the objects under another resource's
	// keys in that resource's shape: one set of objects served through
	// two APIs (events.k8s.io/v1 Events are core/v1 Events in etcd, as
	// upstream's cohabiting event resources).
	StoredAs *StoredAs

	// Hooks; nil means "nothing to do".
	PrepareForCreate       func(obj runtime.Object)
	PrepareForUpdate       func(obj, old runtime.Object)
	PrepareForStatusUpdate func(obj, old runtime.Object)
	Default                func(obj runtime.Object)
	Validate               func(obj runtime.Object) field.ErrorList
	ValidateUpdate         func(obj, old runtime.Object) field.ErrorList
	FieldSet               func(obj runtime.Object) fields.Set
	// Table returns the columns and one row of cells per object. With wide
	// false only priority-0 columns are returned; upstream's server always
	// prints wide and lets the client drop priority>0 columns.
	Table func(objs []runtime.Object, wide bool) ([]metav1.TableColumnDefinition, [][]interface{})

	// ValidateStatusUpdate validates an update through the status subresource.
	ValidateStatusUpdate func(obj, old runtime.Object) field.ErrorList
	// PrepareForFinalize and ValidateFinalize serve namespaces/finalize.
	PrepareForFinalize func(obj, old runtime.Object)
	ValidateFinalize   func(obj, old runtime.Object) field.ErrorList
	// PrepareForEphemeralContainersUpdate and
	// ValidateEphemeralContainersUpdate serve pods/ephemeralcontainers: the
	// request carries a whole Pod, of which only the ephemeral containers
	// are kept.
	PrepareForEphemeralContainersUpdate func(obj, old runtime.Object)
	ValidateEphemeralContainersUpdate   func(obj, old runtime.Object) field.ErrorList
	// PrepareForResizeUpdate and ValidateResizeUpdate serve pods/resize:
	// the request carries a whole Pod, of which only the containers'
	// resources and resize policies are kept.
	PrepareForResizeUpdate func(obj, old runtime.Object)
	ValidateResizeUpdate   func(obj, old runtime.Object) field.ErrorList
	// PrepareForApprovalUpdate and ValidateApprovalUpdate serve
	// certificatesigningrequests/approval: only the Approved and Denied
	// conditions of the request's object are kept.
	PrepareForApprovalUpdate func(obj, old runtime.Object)
	ValidateApprovalUpdate   func(obj, old runtime.Object) field.ErrorList
	// GetScale and SetScale serve the scale subresource (autoscaling/v1
	// Scale): GetScale reads it from obj, SetScale validates s and applies
	// its spec.replicas to obj.
	GetScale func(obj runtime.Object) *autoscalingv1.Scale
	SetScale func(obj runtime.Object, s *autoscalingv1.Scale) field.ErrorList

	// Create and delete hooks, for resources whose objects touch others
	// (see Storage); the HTTP layer runs them in place of special cases.

	// BeginCreate runs after validation and validating admission, just
	// before the object is stored; the FinishFunc it returns runs right
	// after the store, successful or not (services: cluster IPs and node
	// ports chosen under a lock held until then).
	BeginCreate func(ctx context.Context, obj runtime.Object, s Storage) (FinishFunc, error)
	// AfterCreate runs once a create (not a dry run) stored obj
	// (namespaces: their default service account).
	AfterCreate func(ctx context.Context, obj runtime.Object, s Storage)
	// GracePeriod is a deletion's grace period in seconds (pods: bound,
	// unfinished ones). An object deleted with one is only marked; nil
	// means none.
	GracePeriod func(obj runtime.Object, opts *metav1.DeleteOptions) int64
	// PrepareForDelete changes an object being marked for deletion
	// (namespaces: Terminating).
	PrepareForDelete func(obj runtime.Object)
	// FinalizeDelete, when set, owns the removal: a deletion only marks
	// the object, even without finalizers or a grace period, and the
	// object is never removed by the generic path; FinalizeDelete then
	// starts the work that removes it (namespaces: emptied in the
	// background, then removed). Dry runs do not call it.
	FinalizeDelete func(obj runtime.Object, s Storage)
	// Bind applies a Binding (the binding subresource) to the stored
	// object (pods: once, to a node).
	Bind func(obj runtime.Object, binding *v1.Binding) error
}

// StoredAs is the resource whose keys hold a resource's objects, and the
// conversion between the two shapes.
type StoredAs struct {
	Resource   schema.GroupResource
	New        func() runtime.Object // an empty object of the stored shape
	ToStored   func(runtime.Object) runtime.Object
	FromStored func(runtime.Object) runtime.Object
}

// FinishFunc ends what BeginCreate began, once the object is stored
// (success) or not.
type FinishFunc func(ctx context.Context, success bool)

// Storage is the API server's side of the hooks that read or write other
// objects than the one in hand; the API server implements it.
type Storage interface {
	// List returns the stored objects of res in namespace ("": all).
	List(ctx context.Context, res *Resource, namespace string) ([]runtime.Object, error)
	// CreateInternal creates obj of res on the server's own behalf,
	// defaulted and prepared but neither admitted nor validated; an
	// existing object is fine, other failures are logged.
	CreateInternal(ctx context.Context, res *Resource, obj runtime.Object)
	// PurgeNamespace empties a terminating namespace in the background
	// and removes it once nothing is left (the namespace controller's
	// work upstream).
	PurgeNamespace(name string)
}

// GroupVersionResource is the resource's group, version and plural name.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GVK.GroupVersion().WithResource(r.Plural)
}

// HasSubresource reports whether r serves the named subresource.
func (r *Resource) HasSubresource(name string) bool {
	for _, s := range r.Subresources {
		if s == name {
			return true
		}
	}
	return false
}

// SubresourceVerbs gives the discovery verbs of a subresource, as upstream
// advertises them.
var SubresourceVerbs = map[string][]string{
	"status":              {"get", "patch", "update"},
	"scale":               {"get", "patch", "update"},
	"ephemeralcontainers": {"get", "patch", "update"},
	"resize":              {"get", "patch", "update"},
	"approval":            {"get", "patch", "update"},
	"binding":             {"create"},
	"eviction":            {"create"},
	"log":                 {"get"},
	"exec":                {"create", "get"},
	"attach":              {"create", "get"},
	"portforward":         {"create", "get"},
	"proxy":               {"create", "delete", "get", "patch", "update"},
	"token":               {"create"},
	"finalize":            {"update"},
}

// Upstream's discovery verbs.
var (
	allVerbs      = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	noCollDelete  = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	createOnly    = []string{"create"}
	categoriesAll = []string{"all"}
)

// Config configures a Registry.
type Config struct {
	// Clock gives Table's AGE and other relative times, and the times
	// hooks stamp into objects (condition and phase transitions). Nil is
	// the real clock.
	Clock clock.PassiveClock
}

// Registry holds the served resources. Its resources and their hooks are
// fixed once New returns; a Registry is safe for concurrent use.
type Registry struct {
	clock   clock.PassiveClock
	all     []*Resource
	metrics []*Resource
	byGVR   map[schema.GroupVersionResource]*Resource
}

// New builds the resources.
func New(cfg Config) *Registry {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	b := &builder{clock: cfg.Clock, serviceIPs: allocator.New(ServiceClusterIPRange)}
	serviceAccounts := b.serviceAccounts()
	r := &Registry{
		clock: cfg.Clock,
		all: []*Resource{
			b.pods(), b.namespaces(serviceAccounts), b.nodes(), b.coreEvents(), b.configMaps(), b.secrets(), serviceAccounts, b.services(), b.endpoints(),
			b.endpointSlices(),
			b.persistentVolumes(), b.persistentVolumeClaims(),
			b.leases(),
			b.deployments(), b.replicaSets(),
			b.storageClasses(),
			b.runtimeClasses(),
			b.certificateSigningRequests(),
			b.eventsV1(),
			b.tokenReviews(), b.selfSubjectAccessReviews(), b.subjectAccessReviews(),
			b.selfSubjectRulesReviews(), b.selfSubjectReviews(),
			b.roles(), b.clusterRoles(), b.roleBindings(), b.clusterRoleBindings(),
		},
		metrics: []*Resource{b.nodeMetrics(), b.podMetrics()},
		byGVR:   map[schema.GroupVersionResource]*Resource{},
	}
	for _, res := range r.all {
		r.byGVR[res.GroupVersionResource()] = res
	}
	return r
}

// builder makes the resources; its clock is the Registry's.
type builder struct {
	clock clock.PassiveClock
	// serviceIPs chooses, under serviceMu, services' cluster IPs and
	// node ports (beginServiceCreate).
	serviceIPs *allocator.Allocator
	serviceMu  sync.Mutex
}

// Clock is the registry's clock.
func (r *Registry) Clock() clock.PassiveClock { return r.clock }

// All returns every served resource, in a stable order.
func (r *Registry) All() []*Resource { return slices.Clone(r.all) }

// ResourceMetrics returns the metrics.k8s.io resources: nodes
// (NodeMetrics) and pods (PodMetrics). They are read-only, computed from
// the kubelets on every request and never stored, so not in All.
func (r *Registry) ResourceMetrics() []*Resource { return slices.Clone(r.metrics) }

// Get returns the resource served at group/version/plural, or nil. The
// metrics.k8s.io resources are not looked up here.
func (r *Registry) Get(group, version, plural string) *Resource {
	return r.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: plural}]
}

// Typed adapters from concrete hook functions to the runtime.Object hooks.

func hook[T runtime.Object](f func(T)) func(runtime.Object) {
	return func(o runtime.Object) { f(o.(T)) }
}

func hook2[T runtime.Object](f func(T, T)) func(runtime.Object, runtime.Object) {
	return func(o, old runtime.Object) { f(o.(T), old.(T)) }
}

func check[T runtime.Object](f func(T) field.ErrorList) func(runtime.Object) field.ErrorList {
	return func(o runtime.Object) field.ErrorList { return f(o.(T)) }
}

func check2[T runtime.Object](f func(T, T) field.ErrorList) func(runtime.Object, runtime.Object) field.ErrorList {
	return func(o, old runtime.Object) field.ErrorList { return f(o.(T), old.(T)) }
}

// metaObject is a pointer to a type embedding metav1.ObjectMeta.
type metaObject interface {
	runtime.Object
	metav1.Object
}

// fieldSet returns the metadata field-selector attributes of T plus extra's.
func fieldSet[T metaObject](namespaced bool, extra func(T) fields.Set) func(runtime.Object) fields.Set {
	return func(o runtime.Object) fields.Set {
		t := o.(T)
		set := fields.Set{"metadata.name": t.GetName()}
		if namespaced {
			set["metadata.namespace"] = t.GetNamespace()
		}
		if extra != nil {
			for k, v := range extra(t) {
				set[k] = v
			}
		}
		return set
	}
}

// validateMeta checks metadata on create; nameFn is the resource's name rule.
func validateMeta(m *metav1.ObjectMeta, namespaced bool, nameFn apimachineryvalidation.ValidateNameFunc) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMeta(m, namespaced, nameFn, field.NewPath("metadata"))
}

func validateMetaUpdate(m, old *metav1.ObjectMeta) field.ErrorList {
	return apimachineryvalidation.ValidateObjectMetaUpdate(m, old, field.NewPath("metadata"))
}

// simpleValidation builds Validate and ValidateUpdate for resources whose
// update check is "metadata update is legal and the new object is valid".
func simpleValidation[T metaObject](validate func(T) field.ErrorList) (func(runtime.Object) field.ErrorList, func(runtime.Object, runtime.Object) field.ErrorList) {
	update := func(o, old T) field.ErrorList {
		errs := apimachineryvalidation.ValidateObjectMetaAccessorUpdate(o, old, field.NewPath("metadata"))
		return append(errs, validate(o)...)
	}
	return check(validate), check2(update)
}

func nonNegative(v int64, p *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(v, p)
}

// Table helpers.

var (
	nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]}
	ageColumn  = metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}
)

func col(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc}
}

func wideCol(name, typ, desc string) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc, Priority: 1}
}

// table builds a Table hook from the full (wide) column list and a row
// printer producing one cell per column.
func table[T runtime.Object](columns []metav1.TableColumnDefinition, row func(T) []interface{}) func([]runtime.Object, bool) ([]metav1.TableColumnDefinition, [][]interface{}) {
	return func(objs []runtime.Object, wide bool) ([]metav1.TableColumnDefinition, [][]interface{}) {
		var keep []int
		var cols []metav1.TableColumnDefinition
		for i, c := range columns {
			if wide || c.Priority == 0 {
				keep = append(keep, i)
				cols = append(cols, c)
			}
		}
		rows := make([][]interface{}, 0, len(objs))
		for _, o := range objs {
			cells := row(o.(T))
			if len(keep) == len(cells) {
				rows = append(rows, cells)
				continue
			}
			r := make([]interface{}, 0, len(keep))
			for _, i := range keep {
				r = append(r, cells[i])
			}
			rows = append(rows, r)
		}
		return cols, rows
	}
}

// since prints the time elapsed since t as upstream does, "<unknown>" when
// t is unset.
func (b *builder) since(t time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(b.clock.Now().Sub(t))
}

func (b *builder) age(m metav1.ObjectMeta) string { return b.since(m.CreationTimestamp.Time) }

// now is the time hooks stamp into objects.
func (b *builder) now() metav1.Time { return metav1.NewTime(b.clock.Now()) }

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
