package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	kjson "sigs.k8s.io/json"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// setKind stamps apiVersion and kind, which stored objects omit.
func setKind(obj runtime.Object, gvk schema.GroupVersionKind) {
	obj.GetObjectKind().SetGroupVersionKind(gvk)
}

// wantsTable reports whether the client asked for server-side printing
// (kubectl get sends Accept: application/json;as=Table;v=v1;g=meta.k8s.io).
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(part, "as=Table") && strings.Contains(part, "g=meta.k8s.io") {
			return true
		}
	}
	return false
}

// writeObject answers with one object, or its Table.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, res *registry.Resource, code int, obj runtime.Object) {
	if wantsTable(r) && res.Table != nil {
		responsewriters.WriteJSON(w, code, s.table(r, res, []runtime.Object{obj}, nil))
		return
	}
	setKind(obj, res.GVK)
	responsewriters.WriteJSON(w, code, obj)
}

// listObject builds the typed list (PodList...) from storage items.
func listObject(res *registry.Resource, items []runtime.Object, rv, cont string, remaining *int64) (runtime.Object, error) {
	list := res.NewList()
	if err := meta.SetList(list, items); err != nil {
		return nil, err
	}
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	lm.SetResourceVersion(rv)
	lm.SetContinue(cont)
	lm.SetRemainingItemCount(remaining)
	gvk := res.GVK
	gvk.Kind += "List"
	setKind(list, gvk)
	return list, nil
}

// table renders objects as a metav1.Table with each row's object as
// PartialObjectMetadata (the default includeObject=Metadata), or the full
// object with includeObject=Object.
func (s *Server) table(r *http.Request, res *registry.Resource, objs []runtime.Object, listMeta *metav1.ListMeta) *metav1.Table {
	// Every column goes out; kubectl hides priority>0 ones unless -o wide.
	cols, cells := res.Table(objs, true)
	t := &metav1.Table{ColumnDefinitions: cols}
	t.Kind, t.APIVersion = "Table", "meta.k8s.io/v1"
	if listMeta != nil {
		t.ListMeta = *listMeta
	}
	include := r.URL.Query().Get("includeObject")
	for i, obj := range objs {
		row := metav1.TableRow{Cells: cells[i]}
		switch include {
		case "None":
		case "Object":
			setKind(obj, res.GVK)
			row.Object = runtime.RawExtension{Object: obj}
		default:
			m, err := meta.Accessor(obj)
			if err == nil {
				pom := &metav1.PartialObjectMetadata{ObjectMeta: *metaCopy(m)}
				pom.Kind, pom.APIVersion = "PartialObjectMetadata", "meta.k8s.io/v1"
				row.Object = runtime.RawExtension{Object: pom}
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if t.Rows == nil {
		t.Rows = []metav1.TableRow{}
	}
	return t
}

func metaCopy(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om.DeepCopy()
	}
	return &metav1.ObjectMeta{
		Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
		ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		Labels: m.GetLabels(), Annotations: m.GetAnnotations(), OwnerReferences: m.GetOwnerReferences(),
		DeletionTimestamp: m.GetDeletionTimestamp(), Generation: m.GetGeneration(),
	}
}

// protobufType is the Kubernetes protobuf media type; client-go's typed
// clients send request bodies in it by default.
const protobufType = "application/vnd.kubernetes.protobuf"

var protoSerializer = protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)

// decodeInto decodes a request body in JSON or protobuf (answers are
// always JSON, which every client accepts). JSON keys match fields case-
// sensitively, as upstream's serializer: encoding/json would let "Name"
// (or the last of "name" and "Name") fill metadata.name.
func decodeInto(contentType string, body []byte, into runtime.Object) error {
	if strings.HasPrefix(contentType, protobufType) {
		_, _, err := protoSerializer.Decode(body, nil, into)
		return err
	}
	return kjson.UnmarshalCaseSensitivePreserveInts(body, into)
}

// readBody reads a request body up to the size limit and decodes it.
func readBody(r *http.Request, into runtime.Object) error {
	body, err := readLimitedBody(r)
	if err != nil {
		return err
	}
	if err := decodeInto(r.Header.Get("Content-Type"), body, into); err != nil {
		return responsewriters.BadRequest("%s", fmt.Sprintf("invalid %T: %v", into, err))
	}
	return nil
}
