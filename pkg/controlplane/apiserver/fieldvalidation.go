package apiserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/openapi"
)

// checkFieldValidation honours the fieldValidation query parameter of
// create, update and patch (advertised in the OpenAPI documents): with
// Strict, unknown or duplicate fields in a JSON body fail the request with
// upstream's "strict decoding error: ..."; with Warn, or no parameter
// (upstream's fieldValidation default, handlers/rest.go), each one
// becomes a Warning header; Ignore changes nothing. The body is put back
// for the handler.
func (h *resourceHandler) checkFieldValidation(w http.ResponseWriter, r *http.Request) error {
	optionsKind := map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[h.ri.Verb]
	directive := r.URL.Query().Get("fieldValidation")
	if optionsKind == "" || directive == metav1.FieldValidationIgnore {
		return nil
	}
	if directive == "" {
		directive = metav1.FieldValidationWarn
	}
	if errs := metav1validation.ValidateFieldValidation(field.NewPath("fieldValidation"), directive); len(errs) > 0 {
		return apierrors.NewInvalid(metav1.SchemeGroupVersion.WithKind(optionsKind).GroupKind(), "", errs)
	}
	into := h.fieldValidationTarget()
	contentType := strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0])
	if into == nil || strings.HasPrefix(contentType, protobufType) || contentType == string(types.JSONPatchType) {
		return nil // protobuf has no unknown fields; JSON patches are not objects
	}
	body, err := readLimitedBody(r)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	strictErrs, err := strictErrors(body, into, h.ri.Verb == "patch" && contentType == string(types.StrategicMergePatchType))
	if err != nil || len(strictErrs) == 0 {
		return nil // malformed bodies are the handler's to reject
	}
	if directive == metav1.FieldValidationStrict {
		return apierrors.NewBadRequest(runtime.NewStrictDecodingError(strictErrs).Error())
	}
	for _, e := range strictErrs {
		w.Header().Add("Warning", fmt.Sprintf("299 - %s", strconv.Quote(e.Error())))
	}
	return nil
}

// strictErrors lists the unknown and duplicate fields of body decoded into
// into. Strategic merge patch directives ($patch, $setElementOrder/...,
// $retainKeys, $deleteFromPrimitiveList/...) are not fields.
func strictErrors(body []byte, into runtime.Object, smp bool) ([]error, error) {
	if !smp {
		return kjson.UnmarshalStrict(body, into, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	}
	var raw interface{}
	dups, err := kjson.UnmarshalStrict(body, &raw, kjson.DisallowDuplicateFields)
	if err != nil {
		return nil, err
	}
	stripped, err := json.Marshal(stripDirectives(raw))
	if err != nil {
		return nil, err
	}
	unknown, err := kjson.UnmarshalStrict(stripped, into, kjson.DisallowUnknownFields)
	return append(dups, unknown...), err
}

func stripDirectives(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		for k, x := range t {
			if strings.HasPrefix(k, "$") {
				delete(t, k)
				continue
			}
			t[k] = stripDirectives(x)
		}
	case []interface{}:
		for i, x := range t {
			t[i] = stripDirectives(x)
		}
	}
	return v
}

// fieldValidationTarget is a new object of the request body's type, nil
// for bodies that are not checked.
func (h *resourceHandler) fieldValidationTarget() runtime.Object {
	switch sub := h.ri.Subresource; sub {
	case "", "status", "finalize", "ephemeralcontainers", "resize":
		return h.res.New()
	default:
		if obj, ok := openapi.SubresourceBody(sub); ok {
			return obj
		}
	}
	return nil
}
