package apiserver

import (
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
)

// maxBody bounds request bodies: kube-apiserver's MaxRequestBodyBytes,
// 3 MiB (twice etcd's default request size, as a JSON body shrinks when
// stored as protobuf).
const maxBody = 3 << 20

// readLimitedBody reads a request body of at most maxBody bytes; a
// longer one is upstream's 413 "Request entity too large: limit is
// 3145728", never a truncated body.
func readLimitedBody(r *http.Request) ([]byte, error) {
	lr := &io.LimitedReader{R: r.Body, N: maxBody + 1}
	body, err := io.ReadAll(lr)
	if err != nil {
		return nil, responsewriters.BadRequest("read body: %v", err)
	}
	if lr.N <= 0 {
		return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", maxBody))
	}
	return body, nil
}
