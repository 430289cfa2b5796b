package openapi

import (
	"reflect"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// oaParam is an operation or path parameter.
type oaParam struct {
	Name, In, Type, Desc string
	Required, Unique     bool
}

func (p oaParam) render(v3 bool) map[string]interface{} {
	m := map[string]interface{}{"name": p.Name, "in": p.In}
	if p.Desc != "" {
		m["description"] = p.Desc
	}
	if p.Required {
		m["required"] = true
	}
	if v3 {
		sch := map[string]interface{}{"type": p.Type}
		if p.Unique {
			sch["uniqueItems"] = true
		}
		m["schema"] = sch
	} else {
		m["type"] = p.Type
		if p.Unique {
			m["uniqueItems"] = true
		}
	}
	return m
}

func queryParam(name, typ, desc string) oaParam {
	return oaParam{Name: name, In: "query", Type: typ, Desc: desc, Unique: true}
}

// Upstream's query parameters (descriptions abridged where long).
var (
	paramPretty          = queryParam("pretty", "string", "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).")
	paramDryRun          = queryParam("dryRun", "string", "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed")
	paramFieldManager    = queryParam("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.")
	paramFieldValidation = queryParam("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.")
	paramForce           = queryParam("force", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.")

	writeParams = []oaParam{paramDryRun, paramFieldManager, paramFieldValidation}
	listParams  = []oaParam{
		queryParam("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored."),
		queryParam("continue", "string", "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize."),
		queryParam("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."),
		queryParam("labelSelector", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."),
		queryParam("limit", "integer", "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results."),
		queryParam("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
		queryParam("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset"),
		queryParam("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection."),
		queryParam("timeoutSeconds", "integer", "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity."),
		queryParam("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion."),
	}
	deleteParams = []oaParam{
		paramDryRun,
		queryParam("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately."),
		queryParam("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error."),
		queryParam("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both."),
		queryParam("propagationPolicy", "string", "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground."),
	}
)

// Definitions the operations use besides the resources' own.
const (
	defStatus        = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
	defDeleteOptions = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
	defPatch         = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
)

// oaOp is one operation (HTTP method) on a path.
type oaOp struct {
	ID, Desc, Action string
	GVK              schema.GroupVersionKind
	Body, Resp       string // definition names; no Resp: a stream, described as a string
	Created          bool   // answers 201 (and 202) besides 200
	Params           []oaParam
	Tag              string
	Produces         []string // nil: the serializers' media types
}

// oaPath is one path with its operations, by lower-case method.
type oaPath struct {
	Path   string
	GV     string // "api/v1", "apis/apps/v1"
	Params []oaParam
	Ops    map[string]*oaOp
}

var patchTypes = []string{"application/json-patch+json", "application/merge-patch+json", "application/strategic-merge-patch+json"}

func (o *oaOp) render(method string, v3 bool) map[string]interface{} {
	m := map[string]interface{}{
		"description": o.Desc, "operationId": o.ID, "tags": []string{o.Tag},
		"x-kubernetes-action":             o.Action,
		"x-kubernetes-group-version-kind": map[string]interface{}{"group": o.GVK.Group, "version": o.GVK.Version, "kind": o.GVK.Kind},
	}
	var params []interface{}
	for _, p := range o.Params {
		params = append(params, p.render(v3))
	}
	consumes := []string{"*/*"}
	if method == "patch" {
		consumes = patchTypes
	}
	produces := []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	if o.Produces != nil {
		produces = o.Produces
	}
	codes := []string{"200"}
	if o.Created {
		codes = append(codes, "201", "202")
	}
	responses := map[string]interface{}{"401": map[string]interface{}{"description": "Unauthorized"}}
	if v3 {
		if o.Body != "" {
			content := map[string]interface{}{}
			for _, c := range consumes {
				content[c] = map[string]interface{}{"schema": map[string]interface{}{"$ref": "#/components/schemas/" + o.Body}}
			}
			m["requestBody"] = map[string]interface{}{"content": content, "required": o.Body != defDeleteOptions}
		}
		for _, code := range codes {
			content := map[string]interface{}{}
			for _, c := range produces {
				content[c] = map[string]interface{}{"schema": o.respSchema("#/components/schemas/")}
			}
			responses[code] = map[string]interface{}{"description": httpText(code), "content": content}
		}
	} else {
		if o.Body != "" {
			params = append(params, map[string]interface{}{"name": "body", "in": "body", "required": o.Body != defDeleteOptions,
				"schema": map[string]interface{}{"$ref": "#/definitions/" + o.Body}})
		}
		for _, code := range codes {
			responses[code] = map[string]interface{}{"description": httpText(code), "schema": o.respSchema("#/definitions/")}
		}
		m["consumes"], m["produces"], m["schemes"] = consumes, produces, []string{"https"}
	}
	if len(params) > 0 {
		m["parameters"] = params
	}
	m["responses"] = responses
	return m
}

// respSchema refers to the response's definition; streams are strings.
func (o *oaOp) respSchema(prefix string) map[string]interface{} {
	if o.Resp == "" {
		return map[string]interface{}{"type": "string"}
	}
	return map[string]interface{}{"$ref": prefix + o.Resp}
}

func httpText(code string) string {
	return map[string]string{"200": "OK", "201": "Created", "202": "Accepted"}[code]
}

func (p *oaPath) render(v3 bool) map[string]interface{} {
	m := map[string]interface{}{}
	var params []interface{}
	for _, pp := range p.Params {
		params = append(params, pp.render(v3))
	}
	m["parameters"] = params
	for method, op := range p.Ops {
		m[method] = op.render(method, v3)
	}
	return m
}

// groupNames gives upstream's operation-ID infix and tag of a group version:
// ("", v1) → CoreV1, core_v1; (coordination.k8s.io, v1) → CoordinationV1,
// coordination_v1.
func groupNames(gv schema.GroupVersion) (id, tag string) {
	g := strings.TrimSuffix(gv.Group, ".k8s.io")
	if g == "" {
		g = "core"
	}
	var camel strings.Builder
	for i, part := range strings.FieldsFunc(g, func(r rune) bool { return r == '.' || r == '-' }) {
		if i == 0 {
			camel.WriteString(part)
		} else {
			camel.WriteString(upperFirst(part))
		}
	}
	return upperFirst(camel.String()) + upperFirst(gv.Version), camel.String() + "_" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// gvPath is the group version's URL path without the leading slash.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

// subresourceKinds are the request/response kinds of subresources that
// take a body, with their Go types; others are described by the
// resource's own kind.
var subresourceKinds = map[string]struct {
	gvk  schema.GroupVersionKind
	obj  runtime.Object
	verb string // method of create-only subresources
}{
	"scale":    {autoscalingv1.SchemeGroupVersion.WithKind("Scale"), &autoscalingv1.Scale{}, ""},
	"binding":  {v1.SchemeGroupVersion.WithKind("Binding"), &v1.Binding{}, "post"},
	"eviction": {policyv1.SchemeGroupVersion.WithKind("Eviction"), &policyv1.Eviction{}, "post"},
	"token":    {authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), &authenticationv1.TokenRequest{}, "post"},
}

// resourcePaths describes res's collection, item and subresource paths as
// upstream does. def gives the definition name of a Go object.
func resourcePaths(res *registry.Resource, def func(runtime.Object) string) []*oaPath {
	gv := res.GVK.GroupVersion()
	idGV, tag := groupNames(gv)
	kind, ns := res.GVK.Kind, ""
	collection := "/" + gvPath(gv) + "/" + res.Plural
	pathParams := []oaParam{paramPretty}
	if res.Namespaced {
		ns = "Namespaced"
		collection = "/" + gvPath(gv) + "/namespaces/{namespace}/" + res.Plural
		pathParams = []oaParam{{Name: "namespace", In: "path", Type: "string", Desc: "object name and auth scope, such as for teams and projects", Required: true, Unique: true}, paramPretty}
	}
	itemParams := append([]oaParam{{Name: "name", In: "path", Type: "string", Desc: "name of the " + kind, Required: true, Unique: true}}, pathParams...)
	self := def(res.New())
	has := map[string]bool{}
	for _, v := range res.Verbs {
		has[v] = true
	}
	op := func(verb, action, suffix string, body, resp string, params []oaParam) *oaOp {
		words := map[string]string{"get": "read", "list": "list", "post": "create", "put": "replace", "patch": "patch", "delete": "delete", "deletecollection": "delete"}
		id := words[action] + idGV
		desc := map[string]string{"get": "read the specified ", "list": "list or watch objects of kind ", "post": "create a ", "put": "replace the specified ", "patch": "partially update the specified ", "delete": "delete a ", "deletecollection": "delete collection of "}[action] + kind
		if action == "deletecollection" {
			id += "Collection"
		}
		id += ns + kind + suffix
		return &oaOp{ID: id, Desc: desc, Action: action, GVK: res.GVK, Body: body, Resp: resp, Params: params, Tag: tag}
	}
	coll := &oaPath{Path: collection, GV: gvPath(gv), Params: pathParams, Ops: map[string]*oaOp{}}
	item := &oaPath{Path: collection + "/{name}", GV: gvPath(gv), Params: itemParams, Ops: map[string]*oaOp{}}
	var list string
	if res.NewList != nil {
		list = def(res.NewList())
	}
	if has["list"] && list != "" {
		coll.Ops["get"] = op("list", "list", "", "", list, listParams)
	}
	if has["create"] {
		coll.Ops["post"] = op("create", "post", "", self, self, writeParams)
		coll.Ops["post"].Created = true
	}
	if has["deletecollection"] {
		coll.Ops["delete"] = op("deletecollection", "deletecollection", "", defDeleteOptions, defStatus, append(append([]oaParam{}, deleteParams...), listParams...))
	}
	if has["get"] {
		item.Ops["get"] = op("get", "get", "", "", self, nil)
	}
	if has["update"] {
		item.Ops["put"] = op("update", "put", "", self, self, writeParams)
		item.Ops["put"].Created = true
	}
	if has["patch"] {
		item.Ops["patch"] = op("patch", "patch", "", defPatch, self, append(append([]oaParam{}, writeParams...), paramForce))
		item.Ops["patch"].Created = true
	}
	if has["delete"] {
		item.Ops["delete"] = op("delete", "delete", "", defDeleteOptions, self, deleteParams)
		item.Ops["delete"].Created = true
	}
	var out []*oaPath
	for _, p := range []*oaPath{coll, item} {
		if len(p.Ops) > 0 {
			out = append(out, p)
		}
	}
	if res.Namespaced && has["list"] && list != "" {
		all := op("list", "list", "ForAllNamespaces", "", list, listParams)
		all.ID = "list" + idGV + kind + "ForAllNamespaces"
		out = append(out, &oaPath{Path: "/" + gvPath(gv) + "/" + res.Plural, GV: gvPath(gv), Params: []oaParam{paramPretty}, Ops: map[string]*oaOp{"get": all}})
	}
	for _, sub := range res.Subresources {
		p := &oaPath{Path: collection + "/{name}/" + sub, GV: gvPath(gv), Params: itemParams, Ops: map[string]*oaOp{}}
		suffix := upperFirst(sub)
		switch sk, ok := subresourceKinds[sub]; {
		case sub == "status" || sub == "scale" || sub == "ephemeralcontainers" || sub == "resize":
			body := self
			if ok {
				body = def(sk.obj)
			}
			p.Ops["get"] = op("get", "get", suffix, "", body, nil)
			p.Ops["put"] = op("update", "put", suffix, body, body, writeParams)
			p.Ops["patch"] = op("patch", "patch", suffix, defPatch, body, append(append([]oaParam{}, writeParams...), paramForce))
			p.Ops["put"].Created, p.Ops["patch"].Created = true, true
			if ok {
				for _, o := range p.Ops {
					o.GVK = sk.gvk
				}
			}
		case sub == "finalize":
			p.Ops["put"] = op("update", "put", suffix, self, self, writeParams)
		case ok:
			body := def(sk.obj)
			o := op("create", "post", suffix, body, body, writeParams)
			o.GVK, o.Created = sk.gvk, true
			p.Ops["post"] = o
		default:
			out = append(out, connectPaths(res, sub, collection)...) // log and the streams
			continue
		}
		out = append(out, p)
	}
	return out
}

// SubresourceBody is a new object of the body type of the subresource
// sub (scale, binding, eviction, token), as the documents describe it;
// false for subresources whose body is the resource's own kind.
func SubresourceBody(sub string) (runtime.Object, bool) {
	sk, ok := subresourceKinds[sub]
	if !ok {
		return nil, false
	}
	return reflect.New(reflect.TypeOf(sk.obj).Elem()).Interface().(runtime.Object), true
}
