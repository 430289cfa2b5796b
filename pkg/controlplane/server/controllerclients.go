package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"golang.org/x/oauth2"
	authnv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/tokens"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

// ControllerManagerUser is the controller manager's own identity, as
// kubeadm's controller-manager.conf: its shared informers and the client
// that provisions the controllers' service accounts and tokens act as it
// (bound to the bootstrap ClusterRole system:kube-controller-manager).
const ControllerManagerUser = "system:kube-controller-manager"

// The controllers' tokens, as upstream's dynamic client builder
// (k8s.io/controller-manager/pkg/clientbuilder): an hour's TokenRequest,
// renewed when a fifth of its lifetime is left; a token that seems to
// live less than ten minutes (clock skew) is treated as living ten.
const (
	controllerTokenSeconds = int64(3600)
	controllerTokenLeeway  = 20 // percent
	controllerTokenMinLife = 10 * time.Minute
	controllerSANamespace  = "kube-system"
	controllerCallTimeout  = 10 * time.Second
)

// SchedulerUser is the scheduler's identity, as kubeadm's scheduler.conf
// (the bootstrap policy binds system:kube-scheduler and
// system:volume-scheduler to it).
const SchedulerUser = "system:kube-scheduler"

// ClusterDNSServiceAccount is the cluster DNS's identity in kube-system:
// the bootstrap policy binds system:kube-dns (endpoints, services) to it,
// and the server binds nodeagent:cluster-dns (clusterDNSRole) for the rest.
const ClusterDNSServiceAccount = "kube-dns"

// controllerManagerConfig is a client configuration of the local secure
// port as system:kube-controller-manager.
func controllerManagerConfig(cfg Config, p *pki.PKI, qps float32, burst int) (*rest.Config, error) {
	return componentConfig(cfg, p, ControllerManagerUser, qps, burst)
}

// componentConfig is a client configuration of the local secure port as
// user, with a fresh client certificate from the cluster CA (kept in
// memory only: nothing else needs it).
func componentConfig(cfg Config, p *pki.PKI, user string, qps float32, burst int) (*rest.Config, error) {
	certPEM, keyPEM, err := p.IssueClientCert(user, nil, 0)
	if err != nil {
		return nil, fmt.Errorf("%s client certificate: %w", user, err)
	}
	c := &rest.Config{Host: cfg.LocalURL(), QPS: qps, Burst: burst,
		TLSClientConfig: rest.TLSClientConfig{CAData: p.CAPEM, CertData: certPEM, KeyData: keyPEM}}
	rest.AddUserAgent(c, user)
	return c, nil
}

// saClientBuilder gives each controller a client that authenticates as
// its service account in kube-system, as kube-controller-manager with
// --use-service-account-credentials: the account is created when
// missing, and the client carries a bound token from the TokenRequest
// API that it renews before it expires.
type saClientBuilder struct {
	// ctx bounds the builder's API calls, including the token renewals
	// the clients make later (oauth2 token sources take no context).
	ctx context.Context
	// base is the controller manager's configuration without its
	// credentials (host, CA, rate limits).
	base rest.Config
	// core provisions the accounts and their tokens, as the controller
	// manager.
	core corev1client.CoreV1Interface
	log  *slog.Logger
}

func newSAClientBuilder(ctx context.Context, kcm *rest.Config, log *slog.Logger) (*saClientBuilder, error) {
	core, err := corev1client.NewForConfig(kcm)
	if err != nil {
		return nil, fmt.Errorf("controller manager client: %w", err)
	}
	return &saClientBuilder{ctx: ctx, base: *rest.AnonymousClientConfig(kcm), core: core, log: log}, nil
}

// client is the clientset of service account kube-system/name. Upstream
// exits when the account cannot be read or created; here that would stop
// the whole control plane, so a failure is retried as token requests are
// before it is returned.
func (b *saClientBuilder) client(name string) (kubernetes.Interface, error) {
	var last error
	err := wait.ExponentialBackoffWithContext(b.ctx, tokenBackoff(), func(context.Context) (bool, error) {
		_, last = b.getOrCreateServiceAccount(name)
		return last == nil, nil
	})
	if err != nil {
		if last != nil {
			err = last
		}
		return nil, err
	}
	c := b.base
	rest.AddUserAgent(&c, tokens.ServiceAccountUser(controllerSANamespace, name).Name)
	ts := &saTokenSource{b: b, name: name}
	c.Wrap(transport.ResettableTokenSourceWrapTransport(transport.NewCachedTokenSource(ts)))
	return kubernetes.NewForConfig(&c)
}

// getOrCreateServiceAccount reads kube-system/name, creating it (and, if
// it can, the namespace) when it does not exist.
func (b *saClientBuilder) getOrCreateServiceAccount(name string) (*v1.ServiceAccount, error) {
	ctx, cancel := context.WithTimeout(b.ctx, controllerCallTimeout)
	defer cancel()
	sas := b.core.ServiceAccounts(controllerSANamespace)
	sa, err := sas.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return sa, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("get service account %s/%s: %w", controllerSANamespace, name, err)
	}
	// As upstream: create the namespace if it seems missing, tolerating
	// refusals (the identity may not create namespaces).
	if _, err := b.core.Namespaces().Get(ctx, controllerSANamespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: controllerSANamespace}}
		if _, err := b.core.Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			b.log.Info("creating the controllers' namespace", "namespace", controllerSANamespace, "err", err)
		}
	}
	sa, err = sas.Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: controllerSANamespace, Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) { // raced with someone else
		sa, err = sas.Get(ctx, name, metav1.GetOptions{})
	}
	if err != nil {
		return nil, fmt.Errorf("create service account %s/%s: %w", controllerSANamespace, name, err)
	}
	b.log.Info("created controller service account", "namespace", controllerSANamespace, "name", name)
	return sa, nil
}

// tokenBackoff is upstream's for token requests: 0.5 s doubling, four
// tries.
func tokenBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 4}
}

// saTokenSource requests tokens for one controller's service account.
type saTokenSource struct {
	b    *saClientBuilder
	name string
}

// Token requests a new token, recreating the account if it was deleted,
// with upstream's backoff.
func (ts *saTokenSource) Token() (*oauth2.Token, error) {
	var tr *authnv1.TokenRequest
	var last error
	err := wait.ExponentialBackoffWithContext(ts.b.ctx, tokenBackoff(), func(context.Context) (bool, error) {
		if _, err := ts.b.getOrCreateServiceAccount(ts.name); err != nil {
			last = err
			ts.b.log.Info("get or create service account failed", "namespace", controllerSANamespace, "serviceAccountName", ts.name, "err", err)
			return false, nil
		}
		ctx, cancel := context.WithTimeout(ts.b.ctx, controllerCallTimeout)
		defer cancel()
		exp := controllerTokenSeconds
		r, err := ts.b.core.ServiceAccounts(controllerSANamespace).CreateToken(ctx, ts.name,
			&authnv1.TokenRequest{Spec: authnv1.TokenRequestSpec{ExpirationSeconds: &exp}}, metav1.CreateOptions{})
		if err != nil {
			last = err
			ts.b.log.Info("get token failed", "namespace", controllerSANamespace, "serviceAccountName", ts.name, "err", err)
			return false, nil
		}
		tr = r
		return true, nil
	})
	if err != nil {
		if last != nil && !errors.Is(err, context.Canceled) {
			err = fmt.Errorf("%w (last: %w)", err, last)
		}
		return nil, fmt.Errorf("failed to get token for %s/%s: %w", controllerSANamespace, ts.name, err)
	}
	lifetime := time.Until(tr.Status.ExpirationTimestamp.Time)
	if lifetime < controllerTokenMinLife {
		lifetime = controllerTokenMinLife
	}
	leeway := lifetime * controllerTokenLeeway / 100
	return &oauth2.Token{AccessToken: tr.Status.Token, TokenType: "Bearer", Expiry: time.Now().Add(lifetime - leeway)}, nil
}
