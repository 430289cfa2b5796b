package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
)

// podTiming is one pod's start, on the wall clock shared with containerd.
type podTiming struct {
	name     string
	t0       time.Time // raw: first CRI call; agent: manifest rename
	observed time.Time // first seen running by the 5 ms poller
	started  time.Time // container StartedAt from CRI ContainerStatus
	// raw only: when each call returned (RunPodSandbox, ImageStatus,
	// CreateContainer, StartContainer).
	steps [4]time.Time
	// agent only: when /pods first reported the pod Running.
	reported time.Time
}

// series is one side's measurements.
type series struct {
	single []podTiming // one pod at a time
	batch  []podTiming // all pods at once
}

// rawRunner starts pods with direct CRI calls, as the agent would.
type rawRunner struct {
	cri     *nart.Client
	watch   *runningWatch
	dir     string // pod log directories, /etc/hosts and termination files
	dns     *criv1.DNSConfig
	timeout time.Duration
	// apiPod: the pods stand for API pods (the flow section), which the
	// ServiceAccount admission gives the kube-api-access volume and the
	// agent the kubernetes Service's environment variables.
	apiPod bool
	// besideAgent: an agent runs on the same runtime (the flow section).
	// The pods then carry every label of the agent's requests but the
	// kubelet's pod UID, under a key of the bench's own: the agent, like
	// the kubelet, only removes sandboxes and containers with that label
	// (runtime.PodRefFromLabels). Labels are containerd metadata: runc and
	// the CNI plugins get the same work.
	besideAgent bool
	// cpu, when set, is sampled once a batch's pods run (before their
	// removal), with the agent's pid (0: none) for its part.
	cpu *cpuSampling

	mu        sync.Mutex
	sandboxes map[string]*v1.Pod // live sandboxes made by the bench
}

func measureRaw(ctx context.Context, cl *cleanups, cri *nart.Client, watch *runningWatch, base string, o options) (series, error) {
	// The agent's DNS for a pod whose ClusterFirst policy falls back to Default.
	dns, err := criconfig.ParseResolvConf("/etc/resolv.conf")
	if err != nil {
		return series{}, err
	}
	r := &rawRunner{cri: cri, watch: watch, dir: filepath.Join(base, "raw"), dns: dns,
		timeout: o.timeout, sandboxes: map[string]*v1.Pod{}}
	cl.add("remove the raw CRI pods", r.removeAll)

	var s series
	fmt.Printf("raw CRI: 1 pod x %d (+1 warm-up) ...\n", o.reps)
	for i, name := range seriesNames("raw1", o.reps+1) {
		t, err := r.runBatch(ctx, []string{name})
		if err != nil {
			return s, err
		}
		if i > 0 {
			s.single = append(s.single, t...)
		}
	}
	fmt.Printf("raw CRI: %d pods at once ...\n", o.pods)
	s.batch, err = r.runBatch(ctx, seriesNames(fmt.Sprintf("raw%d", o.pods), o.pods))
	return s, err
}

// runBatch starts the named pods concurrently, reads their StartedAt and
// removes them again.
func (r *rawRunner) runBatch(ctx context.Context, names []string) ([]podTiming, error) {
	timings := make([]podTiming, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timings[i], errs[i] = r.startPod(ctx, name)
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = completeTimings(ctx, r.cri, r.watch, timings, r.timeout)
	}
	if err == nil && r.cpu != nil {
		r.cpu.end, err = sampleCPU(r.cpu.agentPid)
	}
	return timings, errors.Join(err, r.removeAll(ctx))
}

// completeTimings fills in when the poller saw each pod running and its
// container's StartedAt.
func completeTimings(ctx context.Context, cri *nart.Client, watch *runningWatch, timings []podTiming, timeout time.Duration) error {
	names := make([]string, len(timings))
	for i, t := range timings {
		names[i] = podName(t.name)
	}
	seen, err := watch.wait(ctx, names, timeout)
	if err != nil {
		return err
	}
	for i := range timings {
		s := seen[podName(timings[i].name)]
		timings[i].observed = s.at
		if timings[i].started, err = startedAt(ctx, cri, s.containerID); err != nil {
			return err
		}
	}
	return nil
}

// startPod makes the calls the agent makes for a new pod whose image is
// present: RunPodSandbox, ImageStatus, CreateContainer, StartContainer.
func (r *rawRunner) startPod(ctx context.Context, name string) (podTiming, error) {
	pod := runtimePod(name)
	t := podTiming{name: name}
	sbCfg := r.sandboxConfig(pod)
	mounts, err := r.prepareFiles(pod, sbCfg)
	if err != nil {
		return t, err
	}
	c := &pod.Spec.Containers[0]

	t.t0 = time.Now()
	id, err := r.cri.RunPodSandbox(ctx, sbCfg, "")
	if err != nil {
		return t, err
	}
	r.track(id, pod)
	t.steps[0] = time.Now()
	img, err := r.cri.ImageStatus(ctx, &criv1.ImageSpec{Image: c.Image, UserSpecifiedImage: c.Image}, false)
	if err != nil {
		return t, err
	}
	if img.GetImage() == nil {
		return t, fmt.Errorf("image %s is not in the test instance (run make setup)", c.Image)
	}
	t.steps[1] = time.Now()
	cid, err := r.cri.CreateContainer(ctx, id, r.containerConfig(pod, img.GetImage().GetId(), mounts), sbCfg)
	if err != nil {
		return t, err
	}
	t.steps[2] = time.Now()
	if err := r.cri.StartContainer(ctx, cid); err != nil {
		return t, err
	}
	t.steps[3] = time.Now()
	return t, nil
}

// sandboxConfig is what the agent's buildSandboxConfig produces for the
// bench pod: best-effort QoS, pod network, DNS policy falling back to the
// host's resolv.conf (no cluster DNS), no port mappings, and the
// RuntimeDefault seccomp profile the kubelet always gives the sandbox
// (runc loads it into the pause process: work the runtime does for every
// pod).
func (r *rawRunner) sandboxConfig(pod *v1.Pod) *criv1.PodSandboxConfig {
	return &criv1.PodSandboxConfig{
		Metadata:     &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Hostname:     pod.Name,
		LogDirectory: nart.PodLogsDir(filepath.Join(r.dir, "pods-logs"), pod.Namespace, pod.Name, pod.UID),
		DnsConfig:    r.dns,
		Labels:       r.labels(nart.SandboxLabels(pod)),
		Annotations:  nart.SandboxAnnotations(pod),
		Linux: &criv1.LinuxPodSandboxConfig{
			CgroupParent: cgroupRoot + "/kubepods/besteffort/pod" + string(pod.UID),
			SecurityContext: &criv1.LinuxSandboxSecurityContext{
				NamespaceOptions: podNamespaces(),
				Seccomp:          &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_RuntimeDefault},
			},
		},
	}
}

// containerConfig is what the agent's buildContainerConfig produces for
// the bench container.
func (r *rawRunner) containerConfig(pod *v1.Pod, imageID string, mounts []*criv1.Mount) *criv1.ContainerConfig {
	c := &pod.Spec.Containers[0]
	return &criv1.ContainerConfig{
		Metadata:    &criv1.ContainerMetadata{Name: c.Name},
		Image:       &criv1.ImageSpec{Image: imageID, UserSpecifiedImage: c.Image},
		Command:     c.Command,
		Envs:        r.envs(),
		Labels:      r.labels(nart.ContainerLabels(pod, c)),
		Annotations: nart.ContainerAnnotations(pod, c, 0),
		LogPath:     nart.ContainerLogPath(c.Name, 0),
		Mounts:      mounts,
		Linux: &criv1.LinuxContainerConfig{
			Resources: &criv1.LinuxContainerResources{CpuShares: 2, OomScoreAdj: 1000}, // best-effort
			SecurityContext: &criv1.LinuxContainerSecurityContext{
				NamespaceOptions: podNamespaces(),
				Seccomp:          &criv1.SecurityProfile{ProfileType: criv1.SecurityProfile_Unconfined},
				MaskedPaths: []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
					"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
					"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"},
				ReadonlyPaths: []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
			},
		},
	}
}

// benchPodUIDLabel holds the pod UID of a raw pod beside an agent.
const benchPodUIDLabel = "bench.nodeagent/pod.uid"

// labels are the agent's labels, or with besideAgent their pod UID under
// benchPodUIDLabel.
func (r *rawRunner) labels(agents map[string]string) map[string]string {
	if !r.besideAgent {
		return agents
	}
	if uid, ok := agents[nart.LabelPodUID]; ok {
		delete(agents, nart.LabelPodUID)
		agents[benchPodUIDLabel] = uid
	}
	return agents
}

// kubernetesServiceEnv is what the agent puts into every container of an
// API pod for the control plane's kubernetes Service (10.96.0.1:443).
var kubernetesServiceEnv = []*criv1.KeyValue{
	{Key: "KUBERNETES_PORT", Value: []byte("tcp://10.96.0.1:443")},
	{Key: "KUBERNETES_PORT_443_TCP", Value: []byte("tcp://10.96.0.1:443")},
	{Key: "KUBERNETES_PORT_443_TCP_ADDR", Value: []byte("10.96.0.1")},
	{Key: "KUBERNETES_PORT_443_TCP_PORT", Value: []byte("443")},
	{Key: "KUBERNETES_PORT_443_TCP_PROTO", Value: []byte("tcp")},
	{Key: "KUBERNETES_SERVICE_HOST", Value: []byte("10.96.0.1")},
	{Key: "KUBERNETES_SERVICE_PORT", Value: []byte("443")},
	{Key: "KUBERNETES_SERVICE_PORT_HTTPS", Value: []byte("443")},
}

func (r *rawRunner) envs() []*criv1.KeyValue {
	if !r.apiPod {
		return nil
	}
	return kubernetesServiceEnv
}

func podNamespaces() *criv1.NamespaceOption {
	return &criv1.NamespaceOption{Network: criv1.NamespaceMode_POD, Pid: criv1.NamespaceMode_CONTAINER, Ipc: criv1.NamespaceMode_POD,
		UsernsOptions: &criv1.UserNamespace{Mode: criv1.NamespaceMode_NODE}}
}

// prepareFiles creates, before the clock starts, the pod log directory and
// the files the agent bind-mounts: /etc/hosts and the termination log, and
// for an API pod the service account volume's files, in the agent's mount
// order.
func (r *rawRunner) prepareFiles(pod *v1.Pod, sb *criv1.PodSandboxConfig) ([]*criv1.Mount, error) {
	podDir := filepath.Join(r.dir, "pods", string(pod.UID))
	if err := os.MkdirAll(podDir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(sb.LogDirectory, 0o755); err != nil {
		return nil, err
	}
	hosts := filepath.Join(podDir, "etc-hosts")
	term := filepath.Join(podDir, "termination-log")
	if err := os.WriteFile(hosts, []byte("127.0.0.1\tlocalhost\n"), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(term, nil, 0o666); err != nil {
		return nil, err
	}
	mounts := []*criv1.Mount{
		{ContainerPath: "/etc/hosts", HostPath: hosts, SelinuxRelabel: true},
		{ContainerPath: pod.Spec.Containers[0].TerminationMessagePath, HostPath: term},
	}
	if !r.apiPod {
		return mounts, nil
	}
	sa, err := writeServiceAccountFiles(filepath.Join(podDir, "kube-api-access"), pod.Namespace)
	if err != nil {
		return nil, err
	}
	return append([]*criv1.Mount{{ContainerPath: serviceAccountDir, HostPath: sa, Readonly: true, SelinuxRelabel: true}}, mounts...), nil
}

// serviceAccountDir is where the kube-api-access volume is mounted.
const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// writeServiceAccountFiles writes stand-ins for the kube-api-access
// volume's files (token, ca.crt, namespace): their content does not
// matter to the runtime, the bind mount of their directory does.
func writeServiceAccountFiles(dir, ns string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, content := range map[string]string{"token": "bench", "ca.crt": "bench", "namespace": ns} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}

func (r *rawRunner) track(id string, pod *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sandboxes[id] = pod
}

// removeAll stops and removes every sandbox the bench made (with its
// containers), its files and its pod cgroup directories.
func (r *rawRunner) removeAll(ctx context.Context) error {
	r.mu.Lock()
	sbs := r.sandboxes
	r.sandboxes = map[string]*v1.Pod{}
	r.mu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for id, pod := range sbs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.cri.StopPodSandbox(ctx, id)
			if err := r.cri.RemovePodSandbox(ctx, id); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
			removePodCgroups(string(pod.UID))
		}()
	}
	wg.Wait()
	return errors.Join(append(errs, os.RemoveAll(r.dir))...)
}

// removePodCgroups deletes the (then empty) pod-level cgroup directories
// runc created below the cgroup parent, one per controller on cgroups v1,
// and reports whether there were any.
func removePodCgroups(uid string) bool {
	ctrls, _ := filepath.Glob("/sys/fs/cgroup/*")
	removed := false
	for _, c := range ctrls {
		if os.Remove(filepath.Join(c, cgroupRoot, "kubepods", "besteffort", "pod"+uid)) == nil {
			removed = true
		}
	}
	return removed
}
