package apiclient

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/eviction"
)

// The kubelet's defaults: the status is checked every
// nodeStatusUpdateFrequency and sent on change or at least every
// nodeStatusReportFrequency.
const (
	DefaultNodeStatusUpdateFrequency = 10 * time.Second
	DefaultNodeStatusReportFrequency = 5 * time.Minute
	defaultMaxPods                   = 110
)

// Condition reasons and messages, as the kubelet's.
const (
	ReasonKubeletReady          = "KubeletReady"
	ReasonKubeletNotReady       = "KubeletNotReady"
	ReasonSufficientMemory      = "KubeletHasSufficientMemory"
	ReasonNoDiskPressure        = "KubeletHasNoDiskPressure"
	ReasonSufficientPID         = "KubeletHasSufficientPID"
	MessageKubeletReady         = "kubelet is posting ready status"
	labelHostname, labelOS      = "kubernetes.io/hostname", "kubernetes.io/os"
	labelArch                   = "kubernetes.io/arch"
	containerRuntimeVersionName = "containerd"
)

// Runtime is what the API side asks the container runtime.
type Runtime interface {
	Version(ctx context.Context, apiVersion string) (*criv1.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error)
}

// NodeConfig configures NodeStatus. Client, NodeName and Runtime are
// required.
type NodeConfig struct {
	Client         kubernetes.Interface
	NodeName       string
	NodeIP         string
	RootDir        string          // statfs'd for ephemeral-storage; "": none reported
	Capacity       v1.ResourceList // cpu and memory; pods and ephemeral-storage are added
	Runtime        Runtime
	KubeletVersion string
	// Taints are set on the Node when it is created (registerWithTaints);
	// an existing Node keeps its own, as the kubelet leaves them alone.
	Taints []v1.Taint
	// Labels are added to the standard ones (the kubelet's --node-labels).
	Labels map[string]string
	// MaxPods is the pods capacity (default 110).
	MaxPods int64
	// Reserved is held back from capacity in allocatable (systemReserved
	// plus kubeReserved), with the hard eviction thresholds' share, as the
	// kubelet's GetNodeAllocatableReservation.
	Reserved           v1.ResourceList
	EvictionThresholds []eviction.Threshold
	// UpdateFrequency is how often the status is computed (default 10s),
	// ReportFrequency how often it is sent when unchanged (default 5m).
	UpdateFrequency time.Duration
	ReportFrequency time.Duration
	// KubeletPort is the node API server's port, reported in
	// status.daemonEndpoints.kubeletEndpoint: where the API server sends
	// logs, exec and port-forward requests (0: none).
	KubeletPort int32
	// NetworkCondition, when set, reports NetworkUnavailable (the agent
	// owns the pod network: --network-plugin=kubenet); otherwise the
	// condition is left to whoever sets it. While it returns false (the
	// network has not been looked at since the agent started) the Node
	// keeps the condition it has: a restart must not flip it.
	NetworkCondition func() (v1.NodeCondition, bool)
	// NetworkErr, when set, is why pods may not join the pod network (nil:
	// they may), the error the pod workers wait on (the kubelet's
	// networkErrors): Ready is False with it, as the kubelet's
	// ReadyCondition, instead of with the runtime's NetworkReady alone.
	NetworkErr func() error
	// Images, when set, lists the runtime's images for status.images, the
	// MaxImages largest (-1: all; the kubelet's nodeStatusMaxImages).
	Images    ImageLister
	MaxImages int32
	// Pressure, when set, is the eviction manager's active pressure
	// conditions (MemoryPressure, DiskPressure, PIDPressure); nil: none.
	Pressure func() []v1.NodeConditionType
	Logger   *slog.Logger
	Now      func() time.Time
}

// NodeStatus registers the Node and keeps its status current.
type NodeStatus struct {
	cfg        NodeConfig
	log        *slog.Logger
	lastReport time.Time
	registered chan struct{}
	kick       chan struct{}
}

// NewNodeStatus checks cfg and applies the defaults.
func NewNodeStatus(cfg NodeConfig) (*NodeStatus, error) {
	if cfg.Client == nil || cfg.NodeName == "" || cfg.Runtime == nil {
		return nil, errors.New("apiclient: node status needs Client, NodeName and Runtime")
	}
	if cfg.UpdateFrequency <= 0 {
		cfg.UpdateFrequency = DefaultNodeStatusUpdateFrequency
	}
	if cfg.ReportFrequency <= 0 {
		cfg.ReportFrequency = DefaultNodeStatusReportFrequency
	}
	if cfg.MaxPods <= 0 {
		cfg.MaxPods = defaultMaxPods
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &NodeStatus{cfg: cfg, log: cfg.Logger.With("component", "nodestatus"), registered: make(chan struct{}), kick: make(chan struct{}, 1)}, nil
}

// SetKubeletPort sets NodeConfig.KubeletPort for a NodeStatus built by
// New; call it before Run.
func (n *NodeStatus) SetKubeletPort(port int32) { n.cfg.KubeletPort = port }

// Registered is closed once the Node exists in the API.
func (n *NodeStatus) Registered() <-chan struct{} { return n.registered }

// Run registers the node (retrying with back-off) and then checks its
// status every UpdateFrequency until ctx ends.
func (n *NodeStatus) Run(ctx context.Context) error {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 7*time.Second) {
		err := n.register(ctx)
		if err == nil {
			break
		}
		n.log.Error("register node", "err", err, "retryIn", delay)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
	}
	close(n.registered)
	t := time.NewTicker(n.cfg.UpdateFrequency)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-n.kick:
		}
		if err := n.sync(ctx); err != nil && ctx.Err() == nil {
			n.log.Warn("update node status", "err", err)
		}
	}
}

// Trigger checks the status now rather than at the next period (a
// condition changed).
func (n *NodeStatus) Trigger() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// register creates the Node with its status, or brings the labels of an
// existing one up to date and reports its status.
func (n *NodeStatus) register(ctx context.Context) error {
	nodes := n.cfg.Client.CoreV1().Nodes()
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Labels: n.labels()}}
	node.Spec.Taints = append([]v1.Taint(nil), n.cfg.Taints...)
	created, err := nodes.Create(ctx, node, metav1.CreateOptions{})
	switch {
	case err == nil:
		n.log.Info("node registered")
		if err := n.patchStatus(ctx, created, n.status(ctx, nil)); err != nil {
			return fmt.Errorf("node status: %w", err)
		}
		n.lastReport = n.cfg.Now()
		return nil
	case !apierrors.IsAlreadyExists(err):
		return fmt.Errorf("create node: %w", err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := false
		for k, v := range n.labels() {
			if cur.Labels[k] != v {
				if cur.Labels == nil {
					cur.Labels = map[string]string{}
				}
				cur.Labels[k], changed = v, true
			}
		}
		if changed {
			_, err = nodes.Update(ctx, cur, metav1.UpdateOptions{})
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("update node labels: %w", err)
	}
	n.log.Info("node already registered")
	n.lastReport = time.Time{} // report now
	return n.sync(ctx)
}

func (n *NodeStatus) labels() map[string]string {
	l := map[string]string{}
	for k, v := range n.cfg.Labels {
		l[k] = v
	}
	l[labelHostname], l[labelOS], l[labelArch] = n.cfg.NodeName, goruntime.GOOS, goruntime.GOARCH
	return l
}

// sync sends the status when it changed or the report period passed.
func (n *NodeStatus) sync(ctx context.Context) error {
	nodes := n.cfg.Client.CoreV1().Nodes()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := nodes.Get(ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return err // NotFound: deleted by someone; upstream waits for a restart too
		}
		st := n.status(ctx, &cur.Status)
		now := n.cfg.Now()
		if sameStatus(cur.Status, st) && now.Sub(n.lastReport) < n.cfg.ReportFrequency {
			return nil
		}
		if err := n.patchStatus(ctx, cur, st); err != nil {
			return err
		}
		n.lastReport = now
		return nil
	})
}

// patchStatus writes st as the Node's status with a strategic merge patch
// from cur, as the kubelet's PatchNodeStatus does, rather than an update
// of the whole object: the patch holds only the status, so a change of the
// spec meanwhile (the node lifecycle controller's not-ready taint, added
// right after registration) neither conflicts nor makes kube-apiserver's
// NodeRestriction refuse the write ("is not allowed to modify taints": it
// compares the written object's taints with the stored ones).
func (n *NodeStatus) patchStatus(ctx context.Context, cur *v1.Node, st v1.NodeStatus) error {
	oldJSON, err := json.Marshal(cur)
	if err != nil {
		return fmt.Errorf("encode node: %w", err)
	}
	next := cur.DeepCopy()
	next.Status = st
	newJSON, err := json.Marshal(next)
	if err != nil {
		return fmt.Errorf("encode node: %w", err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldJSON, newJSON, v1.Node{})
	if err != nil {
		return fmt.Errorf("node status patch: %w", err)
	}
	_, err = n.cfg.Client.CoreV1().Nodes().Patch(ctx, cur.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return err
}

// sameStatus compares two statuses ignoring heartbeat times.
func sameStatus(a, b v1.NodeStatus) bool {
	strip := func(s v1.NodeStatus) v1.NodeStatus {
		s = *s.DeepCopy()
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
		return s
	}
	return apiequality.Semantic.DeepEqual(strip(a), strip(b))
}

// status computes the node status; old (may be nil) keeps the transition
// times of conditions that did not change and fields others own.
func (n *NodeStatus) status(ctx context.Context, old *v1.NodeStatus) v1.NodeStatus {
	var st v1.NodeStatus
	if old != nil {
		st = *old.DeepCopy()
	}
	capacity := n.cfg.Capacity.DeepCopy()
	if capacity == nil {
		capacity = v1.ResourceList{}
	}
	capacity[v1.ResourcePods] = *resource.NewQuantity(n.cfg.MaxPods, resource.DecimalSI)
	if q, ok := EphemeralStorageCapacity(n.cfg.RootDir); ok {
		capacity[v1.ResourceEphemeralStorage] = q
	}
	st.Capacity, st.Allocatable = capacity, Allocatable(capacity, AllocatableReservation(capacity, n.cfg.Reserved, n.cfg.EvictionThresholds))
	st.Addresses = nil
	if n.cfg.NodeIP != "" {
		st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: n.cfg.NodeIP})
	}
	st.Addresses = append(st.Addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: n.cfg.NodeName})
	st.NodeInfo = n.nodeInfo(ctx)
	st.DaemonEndpoints.KubeletEndpoint.Port = n.cfg.KubeletPort
	n.setImages(ctx, &st)

	now := metav1.NewTime(n.cfg.Now())
	ready := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonKubeletReady, Message: MessageKubeletReady}
	if msg := n.readyProblem(ctx); msg != "" {
		ready = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: ReasonKubeletNotReady, Message: msg}
	}
	conds := append(n.pressureConditions(), ready)
	if n.cfg.NetworkCondition != nil {
		if c, ok := n.cfg.NetworkCondition(); ok {
			conds = append(conds, c)
		}
	}
	for _, c := range conds {
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		setCondition(&st, c)
	}
	return st
}

// setCondition replaces or appends c, keeping the transition time when the
// status did not change.
func setCondition(st *v1.NodeStatus, c v1.NodeCondition) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == c.Type {
			if st.Conditions[i].Status == c.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i] = c
			return
		}
	}
	st.Conditions = append(st.Conditions, c)
}

// readyProblem returns why the node is not ready, "" if it is: the
// runtime's problems, then the network's, one error aggregated as the
// kubelet's ReadyCondition aggregates runtimeErrors and networkErrors.
func (n *NodeStatus) readyProblem(ctx context.Context) string {
	var errs []error
	if msg := n.runtimeProblem(ctx); msg != "" {
		errs = append(errs, errors.New(msg))
	}
	if n.cfg.NetworkErr != nil {
		errs = append(errs, n.cfg.NetworkErr())
	}
	if agg := utilerrors.NewAggregate(errs); agg != nil {
		return agg.Error()
	}
	return ""
}

// runtimeProblem returns why the runtime is not ready, "" if it is; the
// network is looked at here only when NetworkErr does not say.
func (n *NodeStatus) runtimeProblem(ctx context.Context) string {
	resp, err := n.cfg.Runtime.Status(ctx, false)
	if err != nil {
		return fmt.Sprintf("container runtime is down: %v", err)
	}
	if resp.GetStatus() == nil {
		return "container runtime status check may not have completed yet"
	}
	var problems []string
	checks := []string{criv1.RuntimeReady, criv1.NetworkReady}
	if n.cfg.NetworkErr != nil {
		checks = checks[:1]
	}
	for _, want := range checks {
		var c *criv1.RuntimeCondition
		for _, rc := range resp.Status.Conditions {
			if rc.GetType() == want {
				c = rc
			}
		}
		switch {
		case c == nil:
			problems = append(problems, fmt.Sprintf("container runtime does not report %s", want))
		case !c.Status && want == criv1.RuntimeReady:
			problems = append(problems, fmt.Sprintf("container runtime not ready: %s=false reason:%s message:%s", want, c.Reason, c.Message))
		case !c.Status:
			problems = append(problems, fmt.Sprintf("container runtime network not ready: %s=false reason:%s message:%s", want, c.Reason, c.Message))
		}
	}
	return strings.Join(problems, ", ")
}

func (n *NodeStatus) nodeInfo(ctx context.Context) v1.NodeSystemInfo {
	info := v1.NodeSystemInfo{
		KernelVersion:   readTrimmed("/proc/sys/kernel/osrelease"),
		OSImage:         osImage("/etc/os-release"),
		KubeletVersion:  n.cfg.KubeletVersion,
		OperatingSystem: goruntime.GOOS,
		Architecture:    goruntime.GOARCH,
		MachineID:       readTrimmed("/etc/machine-id"),
		BootID:          readTrimmed("/proc/sys/kernel/random/boot_id"),
		SystemUUID:      readTrimmed("/sys/class/dmi/id/product_uuid"),
	}
	if v, err := n.cfg.Runtime.Version(ctx, "v1"); err == nil {
		name := v.RuntimeName
		if name == "" {
			name = containerRuntimeVersionName
		}
		info.ContainerRuntimeVersion = name + "://" + v.RuntimeVersion
	}
	return info
}

func readTrimmed(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// osImage is PRETTY_NAME of os-release, as the kubelet reports it.
func osImage(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "Unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			return strings.Trim(v, `"'`)
		}
	}
	return "Unknown"
}

// EphemeralStorageCapacity is the size of the filesystem holding dir, the
// node's ephemeral-storage capacity; false if unknown or dir is "".
func EphemeralStorageCapacity(dir string) (resource.Quantity, bool) {
	if dir == "" {
		return resource.Quantity{}, false
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil || fs.Blocks == 0 {
		return resource.Quantity{}, false
	}
	return *resource.NewQuantity(int64(fs.Blocks)*fs.Bsize, resource.BinarySI), true
}

// AllocatableReservation is the kubelet's GetNodeAllocatableReservation:
// the reserved resources plus the hard eviction thresholds' share of
// capacity.
func AllocatableReservation(capacity, reserved v1.ResourceList, thresholds []eviction.Threshold) v1.ResourceList {
	out := reserved.DeepCopy()
	if out == nil {
		out = v1.ResourceList{}
	}
	for name, q := range eviction.Reservation(thresholds, capacity) {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Allocatable is capacity minus what is reserved, never below zero, as
// the kubelet's node allocatable.
func Allocatable(capacity, reserved v1.ResourceList) v1.ResourceList {
	out := capacity.DeepCopy()
	for name, r := range reserved {
		q, ok := out[name]
		if !ok {
			continue
		}
		q.Sub(r)
		if q.Sign() < 0 {
			q = *resource.NewQuantity(0, q.Format)
		}
		out[name] = q
	}
	return out
}
