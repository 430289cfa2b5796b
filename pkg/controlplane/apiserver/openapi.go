package apiserver

import (
	"crypto/sha512"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Media types of the protobuf OpenAPI documents.
const (
	openAPIV2ProtoType = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
	openAPIV3ProtoType = "application/com.github.proto-openapi.spec.v3"
)

// openAPIDocs are the served documents, built once from the registry.
type openAPIDocs struct {
	v2, root []byte
	v2ETag   string
	v3       map[string][]byte // "api/v1", "apis/apps/v1" → document
	v3ETag   map[string]string
}

// openAPI builds the documents on first use; they depend only on the
// (static) registry.
var openAPI = sync.OnceValue(buildOpenAPI)

// openAPIV2Proto is the v2 document in the protobuf form client-go's
// discovery client asks for (DiscoveryClient.OpenAPISchema).
var openAPIV2Proto = sync.OnceValues(func() ([]byte, error) {
	doc, err := openapi_v2.ParseDocument(openAPI().v2)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(doc)
})

func etag(data []byte) string { return fmt.Sprintf("%X", sha512.Sum512(data)) }

func buildOpenAPI() *openAPIDocs {
	b := newSchemaBuilder()
	def := func(o runtime.Object) string { return b.define(reflect.TypeOf(o).Elem()) }
	def(&metav1.Status{})
	def(&metav1.DeleteOptions{})
	b.define(reflect.TypeOf(metav1.Patch{}))
	b.setGVK(defStatus, schema.GroupVersionKind{Version: "v1", Kind: "Status"})

	byGV := map[string][]*oaPath{}
	var all []*oaPath
	for _, res := range registry.New(registry.Config{}).All() {
		gv := res.GVK.GroupVersion()
		paths := resourcePaths(res, def)
		byGV[gvPath(gv)] = append(byGV[gvPath(gv)], paths...)
		all = append(all, paths...)
		b.setGVK(def(res.New()), res.GVK)
		if res.NewList != nil {
			b.setGVK(def(res.NewList()), gv.WithKind(res.GVK.Kind+"List"))
		}
		b.setGVK(defDeleteOptions, gv.WithKind("DeleteOptions"))
	}
	for _, sk := range subresourceKinds {
		if name, ok := b.names[reflect.TypeOf(sk.obj).Elem()]; ok {
			b.setGVK(name, sk.gvk)
		}
	}

	info := map[string]interface{}{"title": "Kubernetes", "version": Version.GitVersion}
	docs := &openAPIDocs{v3: map[string][]byte{}, v3ETag: map[string]string{}}
	rootPaths := map[string]interface{}{}
	for gv, paths := range byGV {
		var roots []string
		rendered := map[string]interface{}{}
		for _, p := range paths {
			rendered[p.Path] = p.render(true)
			for _, op := range p.Ops {
				roots = append(roots, op.Body, op.Resp)
			}
		}
		schemas := map[string]interface{}{}
		for name, s := range b.closure(roots) {
			schemas[name] = s.render(true)
		}
		data, err := json.Marshal(map[string]interface{}{
			"openapi": "3.0.0",
			"info":    info,
			"paths":   rendered,
			"components": map[string]interface{}{
				"schemas": schemas,
				"securitySchemes": map[string]interface{}{"BearerToken": map[string]interface{}{
					"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}},
			},
		})
		if err != nil {
			panic(err) // maps of strings: cannot fail
		}
		docs.v3[gv], docs.v3ETag[gv] = data, etag(data)
		rootPaths[gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + docs.v3ETag[gv]}
	}
	docs.root, _ = json.Marshal(map[string]interface{}{"paths": rootPaths})

	sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
	v2paths := map[string]interface{}{}
	for _, p := range all {
		v2paths[p.Path] = p.render(false)
	}
	defs := map[string]interface{}{}
	for name, s := range b.defs {
		defs[name] = s.render(false)
	}
	docs.v2, _ = json.Marshal(map[string]interface{}{
		"swagger":     "2.0",
		"info":        info,
		"paths":       v2paths,
		"definitions": defs,
		"securityDefinitions": map[string]interface{}{"BearerToken": map[string]interface{}{
			"type": "apiKey", "name": "authorization", "in": "header", "description": "Bearer Token authentication"}},
		"security": []interface{}{map[string]interface{}{"BearerToken": []string{}}},
	})
	docs.v2ETag = etag(docs.v2)
	return docs
}

// serveOpenAPI answers /openapi/v2 and /openapi/v3[/<group-version>]; it
// reports whether the path was one of those.
func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) bool {
	p := r.URL.Path
	if p != "/openapi/v2" && p != "/openapi/v3" && !strings.HasPrefix(p, "/openapi/v3/") {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		responsewriters.WriteError(w, &statusErr{code: http.StatusMethodNotAllowed, reason: metav1.StatusReasonMethodNotAllowed, msg: "the server does not allow this method on the requested resource"})
		return true
	}
	docs := openAPI()
	accept := r.Header.Get("Accept")
	switch {
	case p == "/openapi/v2":
		if strings.Contains(accept, "application/com.github.proto-openapi.spec.v2") {
			data, err := openAPIV2Proto()
			if err != nil {
				responsewriters.WriteError(w, err)
				return true
			}
			serveDoc(w, r, openAPIV2ProtoType, data, docs.v2ETag, false)
			return true
		}
		serveDoc(w, r, "application/json", docs.v2, docs.v2ETag, false)
	case p == "/openapi/v3" || p == "/openapi/v3/":
		w.Header().Set("Cache-Control", "no-cache, private")
		serveDoc(w, r, "application/json", docs.root, "", false)
	default:
		gv := strings.Trim(strings.TrimPrefix(p, "/openapi/v3/"), "/")
		data, ok := docs.v3[gv]
		if !ok {
			responsewriters.WriteError(w, responsewriters.NotFoundPath(p))
			return true
		}
		if onlyProtobuf(accept) {
			responsewriters.WriteError(w, &statusErr{code: http.StatusNotAcceptable, reason: metav1.StatusReasonNotAcceptable,
				msg: "only the following media types are accepted: application/json"})
			return true
		}
		tag := docs.v3ETag[gv]
		if h := r.URL.Query().Get("hash"); h != "" && h != tag {
			http.Redirect(w, r, "/openapi/v3/"+gv+"?hash="+tag, http.StatusMovedPermanently)
			return true
		}
		serveDoc(w, r, "application/json", data, tag, r.URL.Query().Get("hash") != "")
	}
	return true
}

// onlyProtobuf reports whether the client accepts nothing but the protobuf
// form of the v3 documents, which is not served.
func onlyProtobuf(accept string) bool {
	if accept == "" {
		return false
	}
	for _, part := range strings.Split(accept, ",") {
		if !strings.Contains(part, openAPIV3ProtoType) {
			return false
		}
	}
	return true
}

// serveDoc writes a document with its ETag, answering 304 to a matching
// If-None-Match; immutable (hash-addressed) documents may be cached a year.
func serveDoc(w http.ResponseWriter, r *http.Request, contentType string, data []byte, tag string, immutable bool) {
	w.Header().Set("Vary", "Accept")
	if tag != "" {
		quoted := `"` + tag + `"`
		w.Header().Set("Etag", quoted)
		if immutable {
			w.Header().Set("Cache-Control", "public, immutable")
			w.Header().Set("Expires", time.Now().AddDate(1, 0, 0).UTC().Format(http.TimeFormat))
		} else if w.Header().Get("Cache-Control") == "" {
			w.Header().Set("Cache-Control", "no-cache, private")
		}
		if inm := r.Header.Get("If-None-Match"); inm == quoted || inm == tag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(data)
	}
}

// statusErr is a plain metav1.Status error.
type statusErr struct {
	code   int32
	reason metav1.StatusReason
	msg    string
}

func (e *statusErr) Error() string { return e.msg }

func (e *statusErr) Status() metav1.Status {
	return metav1.Status{Status: metav1.StatusFailure, Code: e.code, Reason: e.reason, Message: e.msg}
}
