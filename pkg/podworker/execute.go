package podworker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// minGracePeriod is the kubelet's floor for a container's stop timeout.
const minGracePeriod = 2

// execute runs a plan against the runtime, in the kubelet's SyncPod order:
// 1 kill the pod if needed, 2 kill changed containers, 3 create the
// sandbox, 4 start the next init container, or 5 the app containers. The
// pod's volumes are set up before (podVolumes): mounts is where they are.
// Container failures are recorded as waiting reasons and events; an error
// that stops the plan is returned, and the next sync retries.
func (w *worker) execute(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, plan Plan, pullSecrets []v1.Secret, mounts map[string]volume.Mounted) error {
	grace := gracePeriod(pod)
	if plan.KillPod {
		if err := w.killPod(ctx, pod, st, grace); err != nil {
			return fmt.Errorf("kill pod: %w", err)
		}
		if !plan.CreateSandbox {
			return nil
		}
	}
	w.killContainers(ctx, pod, plan.ContainersToKill, grace)

	attempt := plan.Attempt
	if !plan.CreateSandbox && len(st.Sandboxes) > 0 {
		attempt = st.Sandboxes[0].Attempt
	}
	sbCfg, err := criconfig.SandboxConfig(pod, w.d.node, attempt)
	if err == nil && plan.CreateSandbox && len(pod.Spec.ResourceClaims) > 0 {
		msg := fmt.Sprintf("Failed to prepare dynamic resources: %v", resourceClaimsError(pod))
		w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedPrepareDynamicResources", "%s", msg)
		return errors.New(msg)
	}
	var handler string
	if err == nil && plan.CreateSandbox {
		if handler, err = runtimeHandler(w.d.runtimeClasses, pod); err == nil {
			err = w.checkUserNamespace(ctx, pod, handler)
		}
	}
	if err == nil {
		err = w.setUserNamespace(pod, sbCfg)
	}
	if err != nil {
		w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
		return err
	}
	if err := w.ensurePodCgroup(pod, sbCfg.GetLinux().GetCgroupParent()); err != nil {
		return fmt.Errorf("pod cgroup: %w", err)
	}
	sandboxID := plan.SandboxID
	var podIPs []string
	if sb := st.ActiveSandbox(); sb != nil && !plan.CreateSandbox {
		podIPs = sb.IPs
	}
	if plan.CreateSandbox {
		if sandboxID, podIPs, err = w.createSandbox(ctx, pod, sbCfg, handler); err != nil {
			w.d.events.Eventf(pod, v1.EventTypeWarning, "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
			return fmt.Errorf("create sandbox: %w", err)
		}
	}
	podIPs = criconfig.PodIPs(pod, w.d.node.IP, podIPs)
	target := startTarget{sandboxID: sandboxID, sandbox: sbCfg, podIPs: podIPs, status: st, volumes: mounts, pullSecrets: pullSecrets, restartFrom: plan.RestartFrom}
	w.startEphemeral(ctx, pod, plan.EphemeralToStart, target)
	if plan.InitToStart >= 0 {
		w.startContainer(ctx, pod, &pod.Spec.InitContainers[plan.InitToStart], target)
	} else {
		w.startParallel(ctx, pod, pod.Spec.InitContainers, plan.SidecarsToStart, target) // sidecars first
		w.startParallel(ctx, pod, pod.Spec.Containers, plan.ContainersToStart, target)
	}
	for name, d := range plan.BackingOff {
		w.setWaiting(name, Waiting{"CrashLoopBackOff", fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", d, name, podutil.Desc(pod))})
		w.d.events.Eventf(containerRefByName(pod, name), v1.EventTypeWarning, "BackOff", "Back-off restarting failed container %s in pod %s", name, podutil.Desc(pod))
	}
	return nil
}

// startParallel starts the containers of list at the given indexes at once.
func (w *worker) startParallel(ctx context.Context, pod *v1.Pod, list []v1.Container, idx []int, target startTarget) {
	var wg sync.WaitGroup
	for _, i := range idx {
		wg.Go(func() { w.startContainer(ctx, pod, &list[i], target) })
	}
	wg.Wait()
}

// startsAny: the plan starts some container.
func startsAny(p Plan) bool {
	return p.InitToStart >= 0 || len(p.ContainersToStart)+len(p.SidecarsToStart)+len(p.EphemeralToStart) > 0
}

// refreshVolumes sets a running pod's volumes up again, so that config
// map, secret and downward API changes reach its containers.
func (w *worker) refreshVolumes(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus) {
	sb := st.ActiveSandbox()
	if sb == nil || len(pod.Spec.Volumes) == 0 {
		return
	}
	if _, err := w.setUpVolumes(ctx, pod, criconfig.PodIPs(pod, w.d.node.IP, sb.IPs)); err != nil {
		w.log.Warn("refresh volumes", "err", err)
	}
}

// gracePeriod is the stop timeout: the deletion's grace if set, else the
// spec's, never below the kubelet's minimum.
func gracePeriod(pod *v1.Pod) int64 {
	g := int64(30)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		g = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		g = *pod.Spec.TerminationGracePeriodSeconds
	}
	if g < minGracePeriod {
		g = minGracePeriod
	}
	return g
}

// createSandbox runs the pod's sandbox with the CRI runtime handler of its
// RuntimeClass ("" for the runtime's default).
func (w *worker) createSandbox(ctx context.Context, pod *v1.Pod, cfg *criv1.PodSandboxConfig, handler string) (string, []string, error) {
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", nil, fmt.Errorf("create pod log directory: %w", err)
	}
	start := w.d.now()
	id, err := w.d.runtime.RunPodSandbox(ctx, cfg, handler)
	if err != nil {
		w.step(pod, podtrace.Step{Name: podtrace.StepSandbox, Start: start}, criError(err))
		return "", nil, criError(err)
	}
	end := w.d.now()
	w.log.Info("sandbox created", "sandboxID", id, "attempt", cfg.Metadata.Attempt, "runtimeHandler", handler)
	resp, err := w.d.runtime.PodSandboxStatus(ctx, id, false)
	if err != nil {
		return id, nil, err
	}
	w.d.tracer.Record(pod, sandboxStep(pod, start, end, id, resp.GetStatus()))
	ips := runtime.SandboxIPs(resp.GetStatus())
	if err := writeEtcHosts(w.podDir(), pod, ips, w.d.node.DNS.ClusterDomain, nodeHostsFile); err != nil {
		return id, ips, err
	}
	return id, ips, nil
}

type startTarget struct {
	sandboxID string
	sandbox   *criv1.PodSandboxConfig
	podIPs    []string
	status    *runtime.PodStatus
	pidTarget string // an ephemeral container's target container ID
	volumes   map[string]volume.Mounted
	// pullSecrets are the pod's image pull secrets read for this sync.
	pullSecrets []v1.Secret
	// restartFrom is the plan's RestartFrom.
	restartFrom map[string]time.Time
}

// startContainer pulls, creates and starts one container, recording why
// it could not as the container's waiting reason.
func (w *worker) startContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, t startTarget) {
	if from, ok := t.restartFrom[c.Name]; ok {
		// Before the pull, as upstream's doBackOff: a restart that then
		// fails still counts.
		w.d.backoff.Next(backoffKey(pod, c), from)
	}
	imageRef, err := w.d.puller.ensure(ctx, pod, c, t.sandbox, t.pullSecrets)
	if err == nil {
		t.volumes, err = w.withImageVolumes(ctx, pod, c, t)
	}
	if err != nil {
		var pe *pullError
		if errors.As(err, &pe) {
			w.setWaiting(c.Name, Waiting{pe.Reason, pe.Message})
			// The kubelet's start failure event names the reason
			// ("Error: ImagePullBackOff") after the puller's own.
			w.d.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "Error: %s", pe.Reason)
		}
		return
	}
	restartCount := 0
	if prev := t.status.Latest(c.Name); prev != nil {
		restartCount = prev.RestartCount + 1
	} else {
		restartCount = nextRestartFromLogs(filepath.Join(t.sandbox.LogDirectory, c.Name))
	}
	kind := containerKind(pod, c.Name)
	start := w.d.now()
	id, err := w.createContainer(ctx, pod, c, t, imageRef, restartCount)
	w.step(pod, podtrace.Step{Name: podtrace.StepCreate, Container: c.Name, Start: start, Detail: kind}, err)
	if err != nil {
		reason := "CreateContainerError"
		var ce *criconfig.ConfigError
		if errors.As(err, &ce) {
			reason = "CreateContainerConfigError"
		}
		msg := runtimeMessage(err)
		w.setWaiting(c.Name, Waiting{reason, msg})
		w.d.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return
	}
	w.d.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Created", "Created container %s", c.Name)
	start = w.d.now()
	err = w.d.runtime.StartContainer(ctx, id)
	w.step(pod, podtrace.Step{Name: podtrace.StepStart, Container: c.Name, Start: start, Detail: kind}, err)
	if err != nil {
		msg := runtimeMessage(err)
		w.setWaiting(c.Name, Waiting{"RunContainerError", msg})
		w.d.events.Eventf(containerRef(pod, c), v1.EventTypeWarning, "Failed", "Error: %s", msg)
		return
	}
	w.clearWaiting(c.Name)
	w.d.events.Eventf(containerRef(pod, c), v1.EventTypeNormal, "Started", "Started container %s", c.Name)
	podIP := ""
	if len(t.podIPs) > 0 {
		podIP = t.podIPs[0]
	}
	w.runPostStart(ctx, pod, c, id, podIP)
}

func (w *worker) createContainer(ctx context.Context, pod *v1.Pod, c *v1.Container, t startTarget, imageRef string, restartCount int) (_ string, retErr error) {
	if criconfig.RunAsNonRoot(pod, c) {
		img, err := w.d.images.ImageStatus(ctx, &criv1.ImageSpec{Image: imageRef}, false)
		if err != nil {
			return "", err
		}
		if err := criconfig.VerifyRunAsNonRoot(pod, c, img.GetImage()); err != nil {
			return "", err
		}
	}
	termPath, err := w.termMessageFile(c.Name)
	if err != nil {
		return "", err
	}
	defer func() {
		if retErr != nil {
			os.Remove(termPath)
		}
	}()
	envObjs, err := fetchEnvObjects(ctx, w.d.objects, pod.Namespace, c)
	if err != nil {
		return "", err
	}
	services, err := podServices(w.d.services, pod)
	if err != nil {
		return "", err
	}
	in := criconfig.ContainerInputs{
		PodIPs: t.podIPs, ImageRef: imageRef, RestartCount: restartCount,
		TermMessagePath: termPath, PidTarget: t.pidTarget,
		EnvObjects: envObjs, Services: services, Volumes: t.volumes,
		UserNamespace: t.sandbox.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(),
	}
	// Written with the sandbox; written here too when that step failed
	// half-way, so the runtime never bind-mounts a missing file.
	in.EtcHostsPath = filepath.Join(w.podDir(), "etc-hosts")
	if _, err := os.Stat(in.EtcHostsPath); err != nil {
		if err := writeEtcHosts(w.podDir(), pod, t.podIPs, w.d.node.DNS.ClusterDomain, nodeHostsFile); err != nil {
			return "", err
		}
	}
	cfg, err := criconfig.ContainerConfig(pod, c, w.d.node, in)
	if err != nil {
		return "", err
	}
	return w.d.runtime.CreateContainer(ctx, t.sandboxID, cfg, t.sandbox)
}

func (w *worker) podDir() string { return filepath.Join(w.d.rootDir, "pods", string(w.uid)) }

// termMessageFile creates the host file mounted at terminationMessagePath,
// world-writable so that non-root containers can write it.
func (w *worker) termMessageFile(container string) (string, error) {
	dir := filepath.Join(w.podDir(), "containers", container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("termination message dir: %w", err)
	}
	b := make([]byte, 4)
	rand.Read(b)
	p := filepath.Join(dir, hex.EncodeToString(b))
	if err := os.WriteFile(p, nil, 0o666); err != nil {
		return "", fmt.Errorf("termination message file: %w", err)
	}
	return p, os.Chmod(p, 0o666)
}

// nextRestartFromLogs continues the restart count from existing log files,
// so a container whose runtime record was lost does not overwrite 0.log.
func nextRestartFromLogs(dir string) int {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	next := 0
	for _, e := range entries {
		n, err := strconv.Atoi(strings.TrimSuffix(e.Name(), ".log"))
		if err == nil && strings.HasSuffix(e.Name(), ".log") && n+1 > next {
			next = n + 1
		}
	}
	return next
}

// nodeHostsFile is the node's hosts file, which a hostNetwork pod's starts
// from.
const nodeHostsFile = "/etc/hosts"

// writeEtcHosts writes the kubelet's managed hosts file (its
// ensureHostsFile): a hostNetwork pod's is the node's with the pod's host
// aliases appended (nodeHosts is the node's file), any other pod's names
// the pod at its IPs.
func writeEtcHosts(dir string, pod *v1.Pod, ips []string, clusterDomain, nodeHosts string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pod dir: %w", err)
	}
	var node []byte
	if pod.Spec.HostNetwork {
		var err error
		if node, err = os.ReadFile(nodeHosts); err != nil {
			return fmt.Errorf("node hosts file: %w", err)
		}
	}
	return os.WriteFile(filepath.Join(dir, "etc-hosts"), etcHostsContent(pod, ips, clusterDomain, node), 0o644)
}

// etcHostsContent is the managed hosts file's text; node is the node's
// hosts file, the start of a hostNetwork pod's.
func etcHostsContent(pod *v1.Pod, ips []string, clusterDomain string, node []byte) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(node)
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n")
		// The sandbox configuration already failed on a bad name: no
		// sandbox, no hosts file.
		host, domain, _ := criconfig.HostnameAndDomain(pod, clusterDomain)
		for _, ip := range ips {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, host, domain, host)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, host)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
	}
	for _, a := range pod.Spec.HostAliases {
		fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
	}
	return b.Bytes()
}

func (w *worker) killContainers(ctx context.Context, pod *v1.Pod, kills map[string]KillReason, grace int64) {
	var wg sync.WaitGroup
	for id, k := range kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g := grace
			if k.Grace != nil {
				g = max(*k.Grace, minGracePeriod)
			}
			w.d.events.Eventf(containerRefByName(pod, k.Name), v1.EventTypeNormal, "Killing", "%s", k.Message)
			g = w.runPreStop(ctx, pod, k.Name, id, g)
			if err := w.d.runtime.StopContainer(ctx, id, g); err != nil && !runtime.IsNotFound(err) {
				w.log.Error("stop container failed", "container", k.Name, "err", err)
			}
		}()
	}
	wg.Wait()
}

// killPod stops every running container with the grace period, the app
// containers first and then the sidecars in reverse order, each with what
// is left of the grace period (as upstream); then every sandbox (which
// tears down the pod's network).
func (w *worker) killPod(ctx context.Context, pod *v1.Pod, st *runtime.PodStatus, grace int64) error {
	start := time.Now()
	sidecars := sidecarNames(pod)
	kills := map[string]KillReason{}
	for _, c := range st.Running() {
		if !sidecars[c.Name] {
			kills[c.ID] = KillReason{Name: c.Name, Message: fmt.Sprintf("Stopping container %s", c.Name)}
		}
	}
	w.killContainers(ctx, pod, kills, grace)
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		name := pod.Spec.InitContainers[i].Name
		if !sidecars[name] {
			continue
		}
		for _, c := range st.Running() {
			if c.Name == name {
				left := max(grace-int64(time.Since(start).Seconds()), minGracePeriod)
				w.killContainers(ctx, pod, map[string]KillReason{c.ID: {Name: name, Message: fmt.Sprintf("Stopping container %s", name)}}, left)
			}
		}
	}
	var errs []error
	for _, sb := range st.Sandboxes {
		if sb.State != criv1.PodSandboxState_SANDBOX_READY {
			continue
		}
		if err := w.d.runtime.StopPodSandbox(ctx, sb.ID); err != nil && !runtime.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkUserNamespace refuses a sandbox for a pod with hostUsers: false, as
// the kubelet's user namespace manager does when it builds the sandbox's
// namespace options (userNamespaceError).
func (w *worker) checkUserNamespace(ctx context.Context, pod *v1.Pod, handler string) error {
	if pod.Spec.HostUsers == nil || *pod.Spec.HostUsers {
		return nil
	}
	var f RuntimeFeatures
	if w.d.features != nil {
		var err error
		if f, err = w.d.features(ctx); err != nil {
			return err
		}
	}
	return userNamespaceError(pod, handler, f)
}

// runtimeMessage is what the kubelet shows of a failed CRI call: the gRPC
// status message alone (grpcstatus.FromError(err).Message()), without the
// call's wrapping; other errors (the agent's own) as they are.
func runtimeMessage(err error) string {
	if st := grpcStatus(err); st != nil {
		return st.Message()
	}
	return err.Error()
}

// resourceClaimsError is why the pod's resource claims cannot be
// prepared: the agent has no dynamic resource allocation (no DRA manager,
// no kubelet plugins), so a pod that claims devices never runs without
// them. A claim made from a template is named in the pod's status only
// once the control plane created it, as the kubelet's resourceclaim.Name
// reads it.
func resourceClaimsError(pod *v1.Pod) error {
	c := pod.Spec.ResourceClaims[0]
	if c.ResourceClaimName == nil {
		created := false
		for _, st := range pod.Status.ResourceClaimStatuses {
			created = created || st.Name == c.Name && st.ResourceClaimName != nil
		}
		if !created {
			return fmt.Errorf("prepare dynamic resources: pod %q: ResourceClaim not created yet", pod.Namespace+"/"+pod.Name)
		}
	}
	return fmt.Errorf("prepare dynamic resources: resource claim %q: this node agent does not do dynamic resource allocation (no DRA drivers)", c.Name)
}
