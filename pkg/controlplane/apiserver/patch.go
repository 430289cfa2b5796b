package apiserver

import (
	"fmt"
	"net/http"
	"sync/atomic"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// maxJSONPatchOperations is upstream's bound on one JSON patch
// (endpoints/handlers/patch.go).
const maxJSONPatchOperations = 10000

// jsonPatchMaxCopyBytes bounds what the copy operations of one JSON
// patch may add, as kube-apiserver's JSONPatchMaxCopyBytes (3 MiB: twice
// etcd's default request size, as a JSON body shrinks to protobuf).
const jsonPatchMaxCopyBytes = 3 << 20

// limitJSONPatchCopies sets json-patch's process-wide copy bound, which
// is the only way v4 of the library takes it, as upstream's
// GenericAPIServer does: it only ever lowers a bound already set.
func limitJSONPatchCopies() {
	for {
		existing := atomic.LoadInt64(&jsonpatch.AccumulatedCopySizeLimit)
		if existing > 0 && existing <= jsonPatchMaxCopyBytes {
			return
		}
		if atomic.CompareAndSwapInt64(&jsonpatch.AccumulatedCopySizeLimit, existing, jsonPatchMaxCopyBytes) {
			return
		}
	}
}

// applyPatch applies a JSON, merge or strategic merge patch to cur with
// upstream's answers: an undecodable JSON patch is a 400, one of more than
// 10000 operations a 413, one that does not apply (a copy past the bound
// among them) a 422. Merge and strategic merge patches cannot grow an
// object by more than their own size, which the body limit bounds.
func applyPatch(pt types.PatchType, cur, patch []byte, schemaObj runtime.Object) ([]byte, error) {
	switch pt {
	case types.JSONPatchType:
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(p) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(p)))
		}
		patched, err := p.Apply(cur)
		if err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return patched, nil
	case types.MergePatchType:
		patched, err := jsonpatch.MergePatch(cur, patch)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return patched, nil
	default:
		patched, err := strategicpatch.StrategicMergePatch(cur, patch, schemaObj)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		return patched, nil
	}
}
