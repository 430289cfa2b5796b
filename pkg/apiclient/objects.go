package apiclient

import (
	"context"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// objectTimeout bounds each read of an object a pod refers to.
const objectTimeout = 10 * time.Second

// Objects reads what the node's pods refer to (config maps, secrets,
// service account tokens, claims and volumes) straight from the API
// server; the node authorizer lets a node read only those of its pods.
type Objects struct{ Client kubernetes.Interface }

func (o Objects) GetConfigMap(ctx context.Context, ns, name string) (*v1.ConfigMap, error) {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	return o.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o Objects) GetSecret(ctx context.Context, ns, name string) (*v1.Secret, error) {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	return o.Client.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o Objects) CreateToken(ctx context.Context, ns, sa string, req *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	return o.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
}

func (o Objects) GetPersistentVolumeClaim(ctx context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	return o.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
}

func (o Objects) GetPersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error) {
	ctx, cancel := context.WithTimeout(ctx, objectTimeout)
	defer cancel()
	return o.Client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
}
