package certificates

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
)

// Signer issues a certificate for a checked request (a pki.CA).
type Signer interface {
	SignRequest(req *x509.CertificateRequest, keyUsage x509.KeyUsage, extUsages []x509.ExtKeyUsage, validity time.Duration) ([]byte, error)
}

// Config says which CA signs what.
type Config struct {
	// ServingSigner signs kubernetes.io/kubelet-serving requests: the
	// kubelet-serving CA, which only the API server trusts, to verify
	// kubelets. Never the cluster CA: a serving request names what a node
	// reports about itself.
	ServingSigner Signer
	// ClientSigner signs kubernetes.io/kube-apiserver-client-kubelet and
	// kubernetes.io/kube-apiserver-client requests: the cluster CA, which
	// the API server verifies client certificates with.
	ClientSigner Signer
	// Authorize decides kubelet client requests; nil asks the API server
	// (SubjectAccessReviewer).
	Authorize Authorizer
}

// Controller approves and signs requests.
type Controller struct {
	client kubernetes.Interface
	cas    map[string]Signer // the CA of each signer name
	authz  Authorizer
	csrs   certlisters.CertificateSigningRequestLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string] // request names
	log    *slog.Logger

	// pendingWhy is why each request was last left pending: a new reason
	// is logged at Info, the same again (every node change requeues the
	// pending serving requests) at Debug.
	mu         sync.Mutex
	pendingWhy map[string]string
}

// New registers the controller's informers with factory; start the
// factory after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config, log *slog.Logger) (*Controller, error) {
	if cfg.ServingSigner == nil || cfg.ClientSigner == nil {
		return nil, errors.New("certificates: a serving signer and a client signer are both required")
	}
	if cfg.Authorize == nil {
		cfg.Authorize = SubjectAccessReviewer(client)
	}
	csrInf := factory.Certificates().V1().CertificateSigningRequests()
	nodeInf := factory.Core().V1().Nodes()
	c := &Controller{
		client: client,
		authz:  cfg.Authorize,
		cas: map[string]Signer{
			certificatesv1.KubeletServingSignerName:             cfg.ServingSigner,
			certificatesv1.KubeAPIServerClientKubeletSignerName: cfg.ClientSigner,
			certificatesv1.KubeAPIServerClientSignerName:        cfg.ClientSigner,
		},
		csrs:       csrInf.Lister(),
		nodes:      nodeInf.Lister(),
		synced:     []cache.InformerSynced{csrInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		queue:      ctrlutil.NewQueue[string]("certificate"),
		log:        log,
		pendingWhy: map[string]string{},
	}
	enqueue := func(obj any) {
		if csr, ok := ctrlutil.Unwrap(obj).(*certificatesv1.CertificateSigningRequest); ok {
			c.queue.Add(csr.Name)
		}
	}
	_, _ = csrInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
		DeleteFunc: enqueue, // to forget it
	}))
	// A serving request may wait for its node's addresses, or for another
	// node to let go of one.
	_, _ = nodeInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc: c.nodeChanged,
		UpdateFunc: func(old, cur any) {
			// Heartbeats (status conditions, leases) change nothing here.
			if o, ok := old.(*v1.Node); !ok || addressesChanged(o, cur.(*v1.Node)) {
				c.nodeChanged(cur)
			}
		},
		DeleteFunc: c.nodeChanged,
	}))
	return c, nil
}

// Run handles requests with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting certificate approver, signer and cleaner")
	done := make(chan struct{})
	go func() {
		defer close(done)
		if cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			c.runCleaner(ctx)
		}
	}()
	defer func() { <-done }()
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

// addressesChanged: what approval reads of a Node (its addresses).
func addressesChanged(old, cur *v1.Node) bool {
	return !slices.Equal(old.Status.Addresses, cur.Status.Addresses)
}

// nodeChanged requeues the pending serving requests: a node's names and
// addresses decide its own requests and those of every other node.
func (c *Controller) nodeChanged(any) {
	list, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range list {
		if csr.Spec.SignerName == certificatesv1.KubeletServingSignerName && pending(csr) {
			c.queue.Add(csr.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		c.leftPending(name, "")
		return nil
	}
	if err != nil {
		return fmt.Errorf("get certificate signing request %s: %w", name, err)
	}
	if !pending(csr) {
		c.leftPending(name, "")
	}
	if _, known := c.cas[csr.Spec.SignerName]; !known || len(csr.Status.Certificate) > 0 ||
		hasCondition(csr, certificatesv1.CertificateDenied) || hasCondition(csr, certificatesv1.CertificateFailed) {
		return nil
	}
	req, err := registry.ParseCSR(csr.Spec.Request)
	if err != nil {
		return nil // validation let it in; nothing to do with it
	}
	if !hasCondition(csr, certificatesv1.CertificateApproved) {
		return c.approve(ctx, csr, req)
	}
	return c.sign(ctx, csr, req)
}

func (c *Controller) approve(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	ok, msg, why := approval(csr, req, nodes)
	if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName {
		if ok, msg, why, err = clientApproval(ctx, csr, req, c.authz); err != nil {
			return err
		}
	}
	if !ok {
		level := slog.LevelInfo
		if !c.leftPending(csr.Name, why) {
			level = slog.LevelDebug
		}
		c.log.Log(ctx, level, "leaving certificate signing request pending", "csr", csr.Name,
			"requester", csr.Spec.Username, "signer", csr.Spec.SignerName, "reason", why)
		return nil
	}
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue,
		Reason: "AutoApproved", Message: msg, LastUpdateTime: metav1.Now(),
	})
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("approve certificate signing request %s: %w", csr.Name, err)
	}
	c.log.Info("approved certificate signing request", "csr", csr.Name, "requester", csr.Spec.Username, "signer", csr.Spec.SignerName)
	return nil // the update brings it back to be signed
}

func (c *Controller) sign(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, req *x509.CertificateRequest) error {
	csr = csr.DeepCopy()
	if err := checkSigner(csr, req); err != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: v1.ConditionTrue,
			Reason: "SignerValidationFailure", Message: err.Error(), LastUpdateTime: metav1.Now(),
		})
		c.log.Info("refusing to sign certificate signing request", "csr", csr.Name, "err", err)
	} else {
		ku, ext := x509Usages(csr.Spec.Usages)
		cert, err := c.cas[csr.Spec.SignerName].SignRequest(req, ku, ext, validity(csr))
		if err != nil {
			return fmt.Errorf("sign %s: %w", csr.Name, err)
		}
		csr.Status.Certificate = cert
	}
	if _, err := c.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update certificate signing request %s: %w", csr.Name, err)
	}
	return nil
}

// leftPending records why the request is left pending ("": it is not, or
// gone) and reports whether that is news.
func (c *Controller) leftPending(name, why string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if why == "" {
		delete(c.pendingWhy, name)
		return false
	}
	news := c.pendingWhy[name] != why
	c.pendingWhy[name] = why
	return news
}

func pending(csr *certificatesv1.CertificateSigningRequest) bool {
	return len(csr.Status.Conditions) == 0 && len(csr.Status.Certificate) == 0
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t {
			return true
		}
	}
	return false
}
