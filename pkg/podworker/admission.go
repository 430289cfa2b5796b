package podworker

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodeagent/nodeagent/pkg/podspec"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/sysctl"
)

// Node-level admission, as the kubelet's predicate admit handler
// (pkg/kubelet/lifecycle/predicate.go) runs it on each new pod, static
// ones included: first the pod's OS and supplementalGroupsPolicy (checks
// preemption could not help), then the general filter: resources, node
// name, node selector/affinity and host ports against the pods already
// admitted, then the node's NoExecute taints (not for static pods). A
// critical pod short of resources only is admitted by preempting others
// (preemption.go).

// The predicate admit handler's OS rejections: reasons and messages.
const (
	reasonPodOSSelectorMismatch = "PodOSSelectorNodeLabelDoesNotMatch"
	reasonPodOSNotSupported     = "PodOSNotSupported"

	msgPodOSSelectorMismatch = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	msgPodOSNotSupported     = "Failed to admit pod as the OS field doesn't match node OS"
)

// Upstream predicate names and descriptions.
const (
	predicateNodeAffinity    = "NodeAffinity"
	predicateNodeName        = "NodeName"
	predicateNodePorts       = "NodePorts"
	predicateTaintToleration = "TaintToleration"

	errReasonNodeAffinity    = "node(s) didn't match Pod's node affinity/selector"
	errReasonNodeName        = "node(s) didn't match the requested node name"
	errReasonNodePorts       = "node(s) didn't have free ports for the requested pod ports"
	errReasonTaintToleration = "node(s) had taints that the pod didn't tolerate"
)

// AdmitResult is the outcome of admitting one pod; Reason and Message are
// empty when it is admitted. Message lacks the "Pod was rejected: " prefix
// (the event carries it without, the status with).
type AdmitResult struct {
	Admit   bool
	Reason  string
	Message string
	// shortage is set on an insufficient resource failure: what
	// preemption would have to free.
	shortage *resourceShortage
}

// NodeInfo is what admission knows of the node.
type NodeInfo struct {
	Name        string
	Labels      map[string]string
	Taints      []v1.Taint
	Allocatable v1.ResourceList
	// SupplementalGroupsPolicy is the node's
	// status.features.supplementalGroupsPolicy: the runtime honours Strict.
	SupplementalGroupsPolicy bool
}

// nodeGetTimeout bounds a read of the Node object during admission, which
// holds up the pod set being handled.
const nodeGetTimeout = 5 * time.Second

// podRequests are a pod's effective requests as the scheduler counts them.
type podRequests struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
}

// computePodRequests is upstream's rule (resourcehelper.PodRequests, as
// the scheduler counts): app containers add up, an init container needs
// its own requests plus the sidecars started before it, the pod the larger
// of the two, plus its overhead.
func computePodRequests(pod *v1.Pod) podRequests {
	r := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return podRequests{MilliCPU: r.Cpu().MilliValue(), Memory: r.Memory().Value(), EphemeralStorage: r.StorageEphemeral().Value()}
}

// insufficientResource is the kubelet's InsufficientResourceError message.
func insufficientResource(name v1.ResourceName, requested, used, capacity int64) AdmitResult {
	return AdmitResult{
		Reason: fmt.Sprintf("OutOf%s", name),
		Message: fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
			name, requested, used, capacity),
		shortage: &resourceShortage{Resource: name, Requested: requested, Used: used, Capacity: capacity},
	}
}

func predicateFailure(name, desc string) AdmitResult {
	return AdmitResult{Reason: name, Message: fmt.Sprintf("Predicate %s failed: %s", name, desc)}
}

// checkResources is noderesources.Fits for pods, cpu, memory and
// ephemeral-storage. Pods, cpu and memory missing from allocatable are not
// checked (the agent may not know them); ephemeral-storage missing is none,
// as upstream's (localStorageCapacityIsolation false reports none).
func checkResources(pod *v1.Pod, admitted []*v1.Pod, alloc v1.ResourceList) []AdmitResult {
	var out []AdmitResult
	if q, ok := alloc[v1.ResourcePods]; ok && int64(len(admitted))+1 > q.Value() {
		out = append(out, insufficientResource(v1.ResourcePods, 1, int64(len(admitted)), q.Value()))
	}
	req := computePodRequests(pod)
	if req == (podRequests{}) {
		return out
	}
	var used podRequests
	for _, p := range admitted {
		r := computePodRequests(p)
		used.MilliCPU += r.MilliCPU
		used.Memory += r.Memory
		used.EphemeralStorage += r.EphemeralStorage
	}
	if q, ok := alloc[v1.ResourceCPU]; ok && req.MilliCPU > 0 && req.MilliCPU > q.MilliValue()-used.MilliCPU {
		out = append(out, insufficientResource(v1.ResourceCPU, req.MilliCPU, used.MilliCPU, q.MilliValue()))
	}
	if q, ok := alloc[v1.ResourceMemory]; ok && req.Memory > 0 && req.Memory > q.Value()-used.Memory {
		out = append(out, insufficientResource(v1.ResourceMemory, req.Memory, used.Memory, q.Value()))
	}
	if q := alloc[v1.ResourceEphemeralStorage]; req.EphemeralStorage > 0 && req.EphemeralStorage > q.Value()-used.EphemeralStorage {
		out = append(out, insufficientResource(v1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, q.Value()))
	}
	return out
}

// matchesNodeAffinity is PodMatchesNodeSelectorAndAffinityTerms.
func matchesNodeAffinity(pod *v1.Pod, node NodeInfo) bool {
	n := &v1.Node{}
	n.Name, n.Labels = node.Name, node.Labels
	ok, _ := nodeaffinity.GetRequiredNodeAffinity(pod).Match(n)
	return ok
}

// portsFit is nodeports.Fits: a wanted host port conflicts with a used one
// of the same protocol and port when either binds all addresses or both
// bind the same one.
func portsFit(pod *v1.Pod, admitted []*v1.Pod) bool {
	want := podspec.HostPorts(pod)
	if len(want) == 0 {
		return true
	}
	for _, p := range admitted {
		for _, u := range podspec.HostPorts(p) {
			for _, w := range want {
				if u.Conflicts(w) {
					return false
				}
			}
		}
	}
	return true
}

// checkPodOS is the predicate admit handler's first two checks, against the
// OS the agent runs on. The first compares the pod's own kubernetes.io/os
// label (metadata.labels, not its node selector) with that OS: upstream
// takes the node's label, but puts the running OS in its place when the
// label is missing or says another, so only the running OS counts. The
// second compares spec.os.name.
func checkPodOS(pod *v1.Pod, nodeOS string) (AdmitResult, bool) {
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != nodeOS {
		return AdmitResult{Reason: reasonPodOSSelectorMismatch, Message: msgPodOSSelectorMismatch}, false
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != nodeOS {
		return AdmitResult{Reason: reasonPodOSNotSupported, Message: msgPodOSNotSupported}, false
	}
	return AdmitResult{}, true
}

// toleratesNoExecute is the kubelet's only taint check: the scheduler
// handles NoSchedule, and a NoExecute taint would evict the pod anyway.
func toleratesNoExecute(pod *v1.Pod, taints []v1.Taint) bool {
	_, untolerated := corev1helpers.FindMatchingUntoleratedTaint(logr.Discard(), taints, pod.Spec.Tolerations,
		func(t *v1.Taint) bool { return t.Effect == v1.TaintEffectNoExecute }, false)
	return !untolerated
}

// AdmitPod runs the kubelet's predicate checks on a new pod against the
// admitted, non-terminal pods and returns the first failure, as upstream
// does, without recovering from it: the manager lets a critical pod
// preempt others (admitLocked).
func AdmitPod(pod *v1.Pod, admitted []*v1.Pod, node NodeInfo) AdmitResult {
	if r, ok := checkBeforeFilter(pod, node); !ok {
		return r
	}
	return firstFailure(generalFilter(pod, admitted, node))
}

// checkBeforeFilter runs the checks upstream makes first, which preemption
// could not help, and whose failure it reports at once.
func checkBeforeFilter(pod *v1.Pod, node NodeInfo) (AdmitResult, bool) {
	if r, ok := checkPodOS(pod, goruntime.GOOS); !ok {
		return r, false
	}
	return checkSupplementalGroupsPolicy(pod, node.SupplementalGroupsPolicy)
}

// generalFilter lists every failed check of upstream's generalFilter, in
// its order. Static pods are spared the taint check alone.
func generalFilter(pod *v1.Pod, admitted []*v1.Pod, node NodeInfo) []AdmitResult {
	reasons := checkResources(pod, admitted, node.Allocatable)
	if !matchesNodeAffinity(pod, node) {
		reasons = append(reasons, predicateFailure(predicateNodeAffinity, errReasonNodeAffinity))
	}
	if pod.Spec.NodeName != "" && pod.Spec.NodeName != node.Name {
		reasons = append(reasons, predicateFailure(predicateNodeName, errReasonNodeName))
	}
	if !portsFit(pod, admitted) {
		reasons = append(reasons, predicateFailure(predicateNodePorts, errReasonNodePorts))
	}
	if !podutil.IsStatic(pod) && !toleratesNoExecute(pod, node.Taints) {
		reasons = append(reasons, predicateFailure(predicateTaintToleration, errReasonTaintToleration))
	}
	return reasons
}

func firstFailure(reasons []AdmitResult) AdmitResult {
	if len(reasons) == 0 {
		return AdmitResult{Admit: true}
	}
	return reasons[0]
}

// newSysctlAllowlist is the kubelet's sysctl allowlist: the safe sysctls
// this kernel namespaces plus the configured unsafe ones. A kernel version
// it cannot read leaves out the safe sysctls that need one, as upstream.
func newSysctlAllowlist(cfg Config) (*sysctl.Allowlist, error) {
	safe, err := sysctl.SafeSysctlAllowlist()
	if err != nil {
		cfg.Logger.Warn("admission: kernel version unknown; safe sysctls that need a minimum kernel are not allowed", "err", err)
	}
	a, err := sysctl.NewAllowlist(append(safe, cfg.AllowedUnsafeSysctls...))
	if err != nil {
		return nil, fmt.Errorf("podworker: allowed sysctls: %w", err)
	}
	return a, nil
}

// checkSysctls is the kubelet's sysctl admit handler (pkg/kubelet/sysctl
// allowlist.go Admit), run on every new pod, static ones included: each of
// spec.securityContext.sysctls must be allowed, and a namespaced one needs
// its namespace not shared with the host (hostNetwork for net.*, hostIPC
// for kernel.shm*, kernel.msg*, kernel.sem, fs.mqueue.*).
func checkSysctls(pod *v1.Pod, allowed *sysctl.Allowlist) AdmitResult {
	if msg := allowed.AdmitPod(pod); msg != "" {
		return AdmitResult{Reason: sysctl.ForbiddenReason, Message: msg}
	}
	return AdmitResult{Admit: true}
}

// rejectedStatus is upstream's rejectPod status.
func rejectedStatus(pod *v1.Pod, r AdmitResult) v1.PodStatus {
	return v1.PodStatus{
		QOSClass: criconfig.QOSClass(pod),
		Phase:    v1.PodFailed,
		Reason:   r.Reason,
		Message:  "Pod was rejected: " + r.Message,
	}
}

// defaultNodeLabels adds the well-known labels the agent always sets.
func defaultNodeLabels(nodeName string, labels map[string]string) map[string]string {
	out := map[string]string{
		v1.LabelHostname:   nodeName,
		v1.LabelOSStable:   goruntime.GOOS,
		v1.LabelArchStable: goruntime.GOARCH,
	}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

// sortByCreation orders new pods as HandlePodAdditions does: oldest first.
func sortByCreation(pods []*v1.Pod) {
	sort.Slice(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
}

// admittedPodsLocked lists the pods that hold node resources: those with a
// worker that have not finished for good (terminating pods still count).
// A pod the API shows finished counts no more, even before its worker has
// stopped what may still run of it: after a restart, finished pods must not
// crowd new ones out (kubernetes issue 105523).
func (m *Manager) admittedPodsLocked() []*v1.Pod {
	var out []*v1.Pod
	for _, w := range m.workers {
		w.mu.Lock()
		active := !w.orphan && w.state != Terminated && !(w.terminal && w.state == Syncing)
		pod := w.pod
		w.mu.Unlock()
		if active {
			out = append(out, pod)
		}
	}
	return out
}

// admitLocked admits a new pod against the admitted ones. When the node
// affinity alone fails, the Node is read again from the API server and
// the pod checked once more, as the kubelet does: a label added just
// before the pod was bound may not have reached the watch yet. A pod that
// still fails is handed to the critical pod handler: an admitted critical
// pod may come with victims, to be stopped before it starts.
func (m *Manager) admitLocked(ctx context.Context, pod *v1.Pod, node NodeInfo) (AdmitResult, preemptionPlan) {
	node.SupplementalGroupsPolicy = m.supplementalGroupsPolicySupported(ctx, pod)
	if r, ok := checkBeforeFilter(pod, node); !ok {
		return r, preemptionPlan{}
	}
	admitted := m.admittedPodsLocked()
	reasons := generalFilter(pod, admitted, node)
	if len(reasons) == 1 && reasons[0].Reason == predicateNodeAffinity && m.cfg.Node != nil {
		if fresh, err := m.apiNodeInfo(ctx, true); err == nil {
			reasons = generalFilter(pod, admitted, fresh)
		} else {
			m.log.Warn("admission: read the node from the API server", "err", err)
		}
	}
	if len(reasons) == 0 {
		return AdmitResult{Admit: true}, preemptionPlan{}
	}
	plan := planPreemption(pod, reasons, admitted)
	switch {
	case plan.Err != nil:
		return unexpectedAdmissionError(plan.Err), plan
	case len(plan.Reasons) > 0:
		return firstFailure(plan.Reasons), plan
	}
	return AdmitResult{Admit: true}, plan
}

// nodeInfo is the node admission checks against: the API's Node object
// (labels and taints as kubectl left them) when there is one, else the
// local settings, as the kubelet falls back to its initial node.
func (m *Manager) nodeInfo(ctx context.Context) NodeInfo {
	if m.cfg.Node != nil {
		info, err := m.apiNodeInfo(ctx, false)
		if err == nil {
			return info
		}
		m.log.Warn("admission: node object unavailable; using the local labels and taints", "err", err)
	}
	return m.localNodeInfo()
}

func (m *Manager) localNodeInfo() NodeInfo {
	return NodeInfo{Name: m.cfg.NodeName, Labels: m.cfg.NodeLabels, Taints: m.cfg.NodeTaints, Allocatable: m.cfg.Allocatable}
}

// supplementalGroupsPolicySupported is what the kubelet publishes as the
// Node's status.features.supplementalGroupsPolicy, read from the runtime
// only for a pod that asks for Strict (the answer matters to no other): a
// runtime that does not answer supports nothing yet.
func (m *Manager) supplementalGroupsPolicySupported(ctx context.Context, pod *v1.Pod) bool {
	if _, ok := checkSupplementalGroupsPolicy(pod, false); ok {
		return false // not Strict: admitted whatever the runtime supports
	}
	f, err := m.features.get(ctx)
	if err != nil {
		m.log.Warn("admission: runtime features unknown; supplementalGroupsPolicy Strict is not supported", "err", err)
	}
	return f.SupplementalGroupsPolicy
}

// apiNodeInfo takes labels and taints from the Node object; allocatable
// stays local, being what the agent itself reports there.
func (m *Manager) apiNodeInfo(ctx context.Context, fresh bool) (NodeInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, nodeGetTimeout)
	defer cancel()
	node, err := m.cfg.Node(ctx, fresh)
	if err != nil {
		return NodeInfo{}, fmt.Errorf("get node %s: %w", m.cfg.NodeName, err)
	}
	info := m.localNodeInfo()
	info.Labels, info.Taints = node.Labels, node.Spec.Taints
	return info, nil
}

// rejectLocked records a pod that failed admission, as upstream's
// rejectPod: a warning event and a Failed status, sent once the manager's
// lock is released.
func (m *Manager) rejectLocked(pod *v1.Pod, r AdmitResult, notify *[]func()) {
	st := rejectedStatus(pod, r)
	m.rejected[pod.UID] = &st
	m.log.Info("pod rejected at admission", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID,
		"reason", r.Reason, "message", r.Message)
	*notify = append(*notify, func() {
		m.events.Eventf(pod, v1.EventTypeWarning, r.Reason, "%s", r.Message)
		if m.cfg.OnStatus != nil {
			m.cfg.OnStatus(pod, *st.DeepCopy())
		}
	})
}

// The kubelet's AppArmor admit handler (pkg/kubelet/lifecycle
// appArmorAdmitHandler over the pkg/security/apparmor validator), which
// upstream runs after the predicate admit handler, on static pods too.
const (
	reasonAppArmor          = "AppArmor"
	msgAppArmorPrefix       = "Cannot enforce AppArmor: "
	errAppArmorHostDisabled = "AppArmor is not enabled on the host"
)

// appArmorHostError is the validator's host check, made once when the
// agent starts as upstream makes it: nil when the kernel enforces
// AppArmor. enabled replaces the host's answer (tests); nil reads it.
func appArmorHostError(enabled func() bool) error {
	if enabled == nil {
		enabled = hostAppArmorEnabled
	}
	if !enabled() {
		return errors.New(errAppArmorHostDisabled)
	}
	return nil
}

// hostAppArmorEnabled is runc's check, which the kubelet uses: AppArmor's
// securityfs directory exists and the module's enabled parameter is Y.
func hostAppArmorEnabled() bool {
	if _, err := os.Stat("/sys/kernel/security/apparmor"); err != nil {
		return false
	}
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && bytes.HasPrefix(b, []byte("Y"))
}

// appArmorRequired tells whether the pod asks for any profile other than
// Unconfined: on the pod, a container, or an AppArmor annotation. Upstream
// decides on the first annotation its map iteration meets; here any
// annotation that is not unconfined counts, so the answer does not depend
// on the order.
func appArmorRequired(pod *v1.Pod) bool {
	confined := func(p *v1.AppArmorProfile) bool { return p != nil && p.Type != v1.AppArmorProfileTypeUnconfined }
	if psc := pod.Spec.SecurityContext; psc != nil && confined(psc.AppArmorProfile) {
		return true
	}
	for _, c := range appArmorContainers(pod) {
		if c.SecurityContext != nil && confined(c.SecurityContext.AppArmorProfile) {
			return true
		}
	}
	for k, v := range pod.Annotations {
		if strings.HasPrefix(k, v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) && v != v1.DeprecatedAppArmorBetaProfileNameUnconfined {
			return true
		}
	}
	return false
}

// checkAppArmor is the AppArmor admit handler: a pending pod that asks for
// a profile is rejected when the host cannot enforce one, or when a
// container's Localhost profile has no name.
func checkAppArmor(pod *v1.Pod, hostErr error) AdmitResult {
	if pod.Status.Phase != v1.PodPending || !appArmorRequired(pod) {
		return AdmitResult{Admit: true}
	}
	reject := func(err string) AdmitResult {
		return AdmitResult{Reason: reasonAppArmor, Message: msgAppArmorPrefix + err}
	}
	if hostErr != nil {
		return reject(hostErr.Error())
	}
	for _, c := range appArmorContainers(pod) {
		p := criconfig.AppArmorProfile(pod, &c)
		if p != nil && p.Type == v1.AppArmorProfileTypeLocalhost && (p.LocalhostProfile == nil || strings.TrimSpace(*p.LocalhostProfile) == "") {
			return reject(fmt.Sprintf("invalid empty AppArmor profile name: %q", p))
		}
	}
	return AdmitResult{Admit: true}
}

// appArmorContainers are the containers upstream's validator visits: init,
// app and ephemeral.
func appArmorContainers(pod *v1.Pod) []v1.Container {
	out := podutil.AllContainers(pod)
	for _, ec := range pod.Spec.EphemeralContainers {
		out = append(out, v1.Container(ec.EphemeralContainerCommon))
	}
	return out
}

// The predicate admit handler's supplementalGroupsPolicy check (beta since
// v1.33: a Strict pod on a node whose runtime cannot honour it is rejected
// instead of silently merged).
const reasonSupplementalGroupsPolicyNotSupported = "SupplementalGroupsPolicyNotSupported"

// checkSupplementalGroupsPolicy is upstream's
// rejectPodAdmissionBasedOnSupplementalGroupsPolicy: only a pod that sets
// the field to Strict needs the runtime's support (node.status.features).
func checkSupplementalGroupsPolicy(pod *v1.Pod, supported bool) (AdmitResult, bool) {
	psc := pod.Spec.SecurityContext
	if psc == nil || psc.SupplementalGroupsPolicy == nil || *psc.SupplementalGroupsPolicy != v1.SupplementalGroupsPolicyStrict || supported {
		return AdmitResult{}, true
	}
	return AdmitResult{Reason: reasonSupplementalGroupsPolicyNotSupported,
		Message: fmt.Sprintf("SupplementalGroupsPolicy=%s is not supported in this node", v1.SupplementalGroupsPolicyStrict)}, false
}

// userNamespaceError is why a pod with hostUsers: false gets no sandbox,
// nil when it asks for no user namespace or the handler supports them. Upstream's user namespace
// manager (GetOrCreateUserNamespaceMappings, through the kubelet's
// HandlerSupportsUserNamespaces) refuses when the runtime does not report
// the pod's handler, as containerd 1.6 reports none, or reports it without
// support; the error fails sandbox creation (FailedCreatePodSandBox) on
// every sync, so the pod never runs, least of all in the host's user
// namespace. Where the handler does support them the pod gets an ID range
// of its own (setUserNamespace).
func userNamespaceError(pod *v1.Pod, handler string, f RuntimeFeatures) error {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil
	}
	// As the kubelet's HandlerSupportsUserNamespaces: a runtime that lists
	// no handlers (containerd 1.6) supports none; one that lists others
	// does not know this one.
	supported, known := f.UserNamespaces[handler]
	if supported {
		return nil
	}
	msg := "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	if handler != "" {
		msg = fmt.Sprintf("can't set `spec.hostUsers: false`, RuntimeClass handler %q does not support user namespaces", handler)
	}
	if !known && len(f.UserNamespaces) > 0 {
		return fmt.Errorf("%s: the handler %q is not known", msg, handler)
	}
	return errors.New(msg)
}
