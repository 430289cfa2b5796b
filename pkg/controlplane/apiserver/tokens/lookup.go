package tokens

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletedGrace is how long a token stays valid after its service account
// or pod began deleting (upstream's validator allows 60s).
const deletedGrace = 60 * time.Second

// LiveUID is the UID of an object a token names (its service account,
// the pod it is bound to), for the authentication of the token; an error
// when the object has been deleting for a while. what names the kind in
// the error ("service account", "pod").
func LiveUID(what string, obj metav1.Object) (string, error) {
	if deletedLongAgo(obj.GetDeletionTimestamp()) {
		return "", fmt.Errorf("%s %s/%s has been deleted", what, obj.GetNamespace(), obj.GetName())
	}
	return string(obj.GetUID()), nil
}

func deletedLongAgo(t *metav1.Time) bool {
	return t != nil && t.Time.Before(time.Now().Add(-deletedGrace))
}
