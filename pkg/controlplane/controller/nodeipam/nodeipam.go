package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrlutil"
)

// Defaults, as the usual kube-controller-manager set-up (flannel's range)
// and upstream's --node-cidr-mask-size for IPv4.
const (
	DefaultClusterCIDR      = "10.244.0.0/16"
	DefaultNodeCIDRMaskSize = 24
)

// EventComponent is the source of the controller's events, as upstream's
// range allocator.
const EventComponent = "cidrAllocator"

// Config is the cluster range; zero values take the defaults.
type Config struct {
	ClusterCIDR      string // --cluster-cidr, one IPv4 CIDR
	NodeCIDRMaskSize int    // --node-cidr-mask-size
}

func (c Config) withDefaults() Config {
	if c.ClusterCIDR == "" {
		c.ClusterCIDR = DefaultClusterCIDR
	}
	if c.NodeCIDRMaskSize == 0 {
		c.NodeCIDRMaskSize = DefaultNodeCIDRMaskSize
	}
	return c
}

// newSet parses and checks the configuration, naming the flags in errors.
func (c Config) newSet() (*CIDRSet, error) {
	c = c.withDefaults()
	cluster, err := netip.ParsePrefix(c.ClusterCIDR)
	if err != nil {
		return nil, fmt.Errorf("invalid --cluster-cidr %q: %w", c.ClusterCIDR, err)
	}
	if !cluster.Addr().Is4() {
		return nil, fmt.Errorf("invalid --cluster-cidr %s: only an IPv4 range is supported", c.ClusterCIDR)
	}
	if c.NodeCIDRMaskSize < 0 {
		return nil, fmt.Errorf("invalid --node-cidr-mask-size %d: must be positive", c.NodeCIDRMaskSize)
	}
	set, err := NewCIDRSet(cluster, c.NodeCIDRMaskSize)
	if err != nil {
		return nil, fmt.Errorf("invalid --cluster-cidr %s with --node-cidr-mask-size %d: %w", c.ClusterCIDR, c.NodeCIDRMaskSize, err)
	}
	return set, nil
}

// Validate checks the flags without building a controller.
func (c Config) Validate() error {
	_, err := c.newSet()
	return err
}

// Controller is the node IPAM controller.
type Controller struct {
	client     kubernetes.Interface
	cidrs      *CIDRSet
	nodeLister corelisters.NodeLister
	synced     cache.InformerSynced
	queue      workqueue.TypedRateLimitingInterface[string]
	events     *ctrlutil.Events
	recorder   record.EventRecorder
	log        *slog.Logger
}

// New registers the controller's informer with factory; start the factory
// after New and before Run. It fails on an invalid Config.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, cfg Config, log *slog.Logger) (*Controller, error) {
	set, err := cfg.newSet()
	if err != nil {
		return nil, err
	}
	nodeInf := factory.Core().V1().Nodes()
	c := &Controller{
		client:     client,
		cidrs:      set,
		nodeLister: nodeInf.Lister(),
		synced:     nodeInf.Informer().HasSynced,
		queue:      ctrlutil.NewQueue[string]("nodeipam"),
		events:     ctrlutil.NewEvents(client),
		log:        log,
	}
	c.recorder = c.events.Recorder(EventComponent)
	_, _ = nodeInf.Informer().AddEventHandler(ctrlutil.EventHandler(log, cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.queue.Add(obj.(*v1.Node).Name) },
		UpdateFunc: func(old, cur any) {
			// Status heartbeats change nothing here: only nodes that wait
			// for a CIDR (also on resyncs: the retry of an exhausted range)
			// or whose CIDRs changed.
			o, n := old.(*v1.Node), cur.(*v1.Node)
			if len(n.Spec.PodCIDRs) == 0 || !slices.Equal(o.Spec.PodCIDRs, n.Spec.PodCIDRs) || n.DeletionTimestamp != nil {
				c.queue.Add(n.Name)
			}
		},
		DeleteFunc: c.nodeDeleted,
	}))
	return c, nil
}

// Run marks the CIDRs of existing nodes as used, then allocates until ctx
// ends.
func (c *Controller) Run(ctx context.Context) error {
	c.log.Info("starting node ipam controller", "clusterCIDR", c.cidrs.cluster, "nodeCIDRMaskSize", c.cidrs.maskSize)
	defer c.events.Start(c.log)()
	// Occupy before any allocation, so that no node gets a block another
	// already has.
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		c.queue.ShutDown()
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("node ipam: node cache did not sync")
	}
	nodes, err := c.nodeLister.List(labels.Everything())
	if err != nil {
		c.queue.ShutDown()
		return fmt.Errorf("node ipam: list nodes: %w", err)
	}
	for _, n := range nodes {
		c.occupy(n)
	}
	return ctrlutil.RunWorkers(ctx, c.log, c.queue, 1, c.sync, c.synced)
}

// nodeDeleted releases the node's blocks and retries the nodes that wait
// for one (Nodes have no finalizer: the delete event is the only notice).
func (c *Controller) nodeDeleted(obj any) {
	n, ok := ctrlutil.Unwrap(obj).(*v1.Node)
	if !ok {
		return
	}
	c.release(n)
	nodes, _ := c.nodeLister.List(labels.Everything())
	for _, o := range nodes {
		if len(o.Spec.PodCIDRs) == 0 {
			c.queue.Add(o.Name)
		}
	}
}

// sync gives the node a CIDR unless it has one, as upstream's
// AllocateOrOccupyCIDR.
func (c *Controller) sync(ctx context.Context, name string) error {
	node, err := c.nodeLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if node.DeletionTimestamp != nil {
		c.release(node)
		return nil
	}
	if len(node.Spec.PodCIDRs) > 0 {
		c.occupy(node)
		return nil
	}
	block, err := c.cidrs.AllocateNext()
	if err != nil {
		c.recordStatusChange(node, v1.EventTypeWarning, "CIDRNotAvailable")
		return fmt.Errorf("allocate a pod CIDR for node %s: %w", name, err)
	}
	return c.assign(ctx, node, block)
}

// assign writes the block into the node's spec, giving it back when the
// write fails (except on a timeout, when it may have been written: a
// leak the next restart repairs is safer than a duplicate, as upstream).
func (c *Controller) assign(ctx context.Context, node *v1.Node, block netip.Prefix) error {
	cidr := block.String()
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidr, "podCIDRs": []string{cidr}}})
	if err != nil {
		return err
	}
	_, err = c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		c.log.Info("set node pod CIDR", "node", node.Name, "podCIDR", cidr)
		return nil
	}
	if !apierrors.IsServerTimeout(err) && !errors.Is(err, context.DeadlineExceeded) {
		_ = c.cidrs.Release(block)
	}
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	c.recordStatusChange(node, v1.EventTypeWarning, "CIDRAssignmentFailed")
	return fmt.Errorf("set pod CIDR %s on node %s: %w", cidr, node.Name, err)
}

// occupy marks the node's CIDRs as used; one outside the cluster CIDR (set
// by hand, or before the range changed) is left alone with a warning
// rather than failing the control plane as upstream does.
func (c *Controller) occupy(n *v1.Node) {
	c.forEachCIDR(n, "occupy", c.cidrs.Occupy)
}

func (c *Controller) release(n *v1.Node) {
	c.forEachCIDR(n, "release", c.cidrs.Release)
}

func (c *Controller) forEachCIDR(n *v1.Node, op string, fn func(netip.Prefix) error) {
	for _, s := range n.Spec.PodCIDRs {
		p, err := netip.ParsePrefix(s)
		if err == nil {
			err = fn(p)
		}
		if err != nil {
			c.log.Warn("cannot "+op+" node pod CIDR", "node", n.Name, "podCIDR", s, "err", err)
		}
	}
}

// recordStatusChange is upstream's RecordNodeStatusChange.
func (c *Controller) recordStatusChange(n *v1.Node, eventType, status string) {
	ref := &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: n.Name, UID: n.UID}
	c.recorder.Eventf(ref, eventType, status, "Node %s status is now: %s", n.Name, status)
}
