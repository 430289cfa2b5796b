package apiserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// writeError answers with the upstream metav1.Status for err; errors that
// are not API errors become 500s.
func writeError(w http.ResponseWriter, err error) {
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

func badRequest(format string, args ...interface{}) error {
	return apierrors.NewBadRequest(fmt.Sprintf(format, args...))
}

func notFoundPath(path string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotFound, Reason: metav1.StatusReasonNotFound,
		Message: "the server could not find the requested resource",
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: metav1.CauseTypeUnexpectedServerResponse, Message: "404 page not found"}}},
	}}
}

func methodNotSupported(gr schema.GroupResource, verb string) error {
	return apierrors.NewMethodNotSupported(gr, verb)
}
