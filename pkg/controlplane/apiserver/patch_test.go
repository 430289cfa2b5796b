package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// copyBomb doubles /data n times: each copy duplicates everything so far.
func copyBomb(n int) string {
	ops := []string{`{"op":"add","path":"/data","value":{"k0":"` + strings.Repeat("x", 1024) + `"}}`}
	for i := 1; i <= n; i++ {
		ops = append(ops, fmt.Sprintf(`{"op":"copy","from":"/data","path":"/data/k%d"}`, i))
	}
	return "[" + strings.Join(ops, ",") + "]"
}

const unprocessablePatch = "the server rejected our request due to an error in our request"

func TestApplyPatchLimits(t *testing.T) {
	limitJSONPatchCopies()
	add := `{"op":"add","path":"/metadata/labels","value":{}}`
	for _, tc := range []struct {
		name, patch string
		pt          types.PatchType
		wantCode    int32
		wantMessage string
	}{
		{name: "copies past the bound", pt: types.JSONPatchType, patch: copyBomb(30), wantCode: http.StatusUnprocessableEntity,
			// Upstream's 422 (NewGenericServerResponse, not an unexpected
			// response) keeps only its generic message.
			wantMessage: unprocessablePatch},
		{name: "10001 operations", pt: types.JSONPatchType, patch: "[" + strings.Repeat(add+",", 10000) + add + "]",
			wantCode: http.StatusRequestEntityTooLarge, wantMessage: "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"},
		{name: "10000 operations", pt: types.JSONPatchType, patch: "[" + strings.Repeat(add+",", 9999) + add + "]"},
		{name: "a few copies", pt: types.JSONPatchType, patch: copyBomb(3)},
		{name: "not a patch", pt: types.JSONPatchType, patch: `{"op":"add"}`, wantCode: http.StatusBadRequest},
		{name: "missing path", pt: types.JSONPatchType, patch: `[{"op":"replace","path":"/nope/x","value":1}]`, wantCode: http.StatusUnprocessableEntity, wantMessage: unprocessablePatch},
		{name: "bad merge patch", pt: types.MergePatchType, patch: `{`, wantCode: http.StatusBadRequest},
		{name: "bad strategic merge patch", pt: types.StrategicMergePatchType, patch: `[]`, wantCode: http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := applyPatch(tc.pt, []byte(`{"metadata":{"name":"c"}}`), []byte(tc.patch), &v1.ConfigMap{})
			if tc.wantCode == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tc.wantCode {
				t.Fatalf("got %v, want a %d", err, tc.wantCode)
			}
			msg := st.Status().Message
			if !strings.HasPrefix(msg, tc.wantMessage) {
				t.Fatalf("message %q, want it to start with %q", msg, tc.wantMessage)
			}
		})
	}
}
