package certificates

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"strings"
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

// Signer issues a certificate for a checked request (the cluster CA:
// pki.PKI).
type Signer interface {
	SignRequest(req *x509.CertificateRequest, keyUsage x509.KeyUsage, extUsages []x509.ExtKeyUsage, validity time.Duration) ([]byte, error)
}

// Controller approves and signs requests.
type Controller struct {
	client kubernetes.Interface
	signer Signer
	csrs   certlisters.CertificateSigningRequestLister
	nodes  corelisters.NodeLister
	synced []cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string] // request names
	log    *slog.Logger
}

// New registers the controller's informers with factory; start the
// factory after New and before Run.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, signer Signer, log *slog.Logger) *Controller {
	csrInf := factory.Certificates().V1().CertificateSigningRequests()
	nodeInf := factory.Core().V1().Nodes()
	c := &Controller{
		client: client,
		signer: signer,
		csrs:   csrInf.Lister(),
		nodes:  nodeInf.Lister(),
		synced: []cache.InformerSynced{csrInf.Informer().HasSynced, nodeInf.Informer().HasSynced},
		queue:  ctrlutil.NewQueue[string]("certificate"),
		log:    log,
	}
	enqueue := func(obj any) {
		if csr, ok := ctrlutil.Unwrap(obj).(*certificatesv1.CertificateSigningRequest); ok {
			c.queue.Add(csr.Name)
		}
	}
	_, _ = csrInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, cur any) { enqueue(cur) },
	})
	// A serving request may wait for its node's addresses.
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.nodeChanged,
		UpdateFunc: func(_, cur any) { c.nodeChanged(cur) },
	})
	return c
}

// Run handles requests with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	c.log.Info("starting certificate approver and signer")
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync, c.synced...)
}

// nodeChanged requeues the node's pending requests.
func (c *Controller) nodeChanged(obj any) {
	node, ok := obj.(*v1.Node)
	if !ok {
		return
	}
	list, err := c.csrs.List(labels.Everything())
	if err != nil {
		return
	}
	for _, csr := range list {
		if csr.Spec.Username == nodeUserPrefix+node.Name && pending(csr) {
			c.queue.Add(csr.Name)
		}
	}
}

func (c *Controller) sync(ctx context.Context, name string) error {
	csr, err := c.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get certificate signing request %s: %w", name, err)
	}
	if _, known := signers[csr.Spec.SignerName]; !known || len(csr.Status.Certificate) > 0 ||
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
	var node *v1.Node
	if n, err := c.nodes.Get(strings.TrimPrefix(req.Subject.CommonName, nodeUserPrefix)); err == nil {
		node = n
	}
	ok, msg, why := approval(csr, req, node)
	if !ok {
		c.log.Debug("leaving certificate signing request pending", "csr", csr.Name, "signer", csr.Spec.SignerName, "reason", why)
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
		cert, err := c.signer.SignRequest(req, ku, ext, validity(csr))
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
