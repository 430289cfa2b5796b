package apiserver

import (
	"net/http"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// patchTypeOf is the patch type a PATCH request's Content-Type names.
func patchTypeOf(r *http.Request) types.PatchType {
	return types.PatchType(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
}
