package responsewriters

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// WriteError answers with the upstream metav1.Status for err; errors that
// are not API errors become 500s.
func WriteError(w http.ResponseWriter, err error) {
	var st apierrors.APIStatus
	status := metav1.Status{}
	if errors.As(err, &st) {
		status = st.Status()
	} else {
		status = apierrors.NewInternalError(err).ErrStatus
	}
	status.Kind, status.APIVersion = "Status", "v1"
	if status.Status == "" {
		status.Status = metav1.StatusFailure
	}
	if status.Code == 0 {
		status.Code = http.StatusInternalServerError
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(int(status.Code))
	_ = json.NewEncoder(w).Encode(&status)
}

// BadRequest is a 400 with a formatted message.
func BadRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

// NotFoundPath is upstream's 404 for a path nothing serves.
func NotFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found"}}},
	}}
}

// MethodNotSupported is a 405 for verb on gr.
func MethodNotSupported(gr schema.GroupResource, verb string) error {
	return apierrors.NewMethodNotSupported(gr, verb)
}

// WriteJSON answers with obj as JSON.
func WriteJSON(w http.ResponseWriter, code int, obj interface{}) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}
