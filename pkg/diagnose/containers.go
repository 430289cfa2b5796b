package diagnose

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// The kubelet's waiting reasons, by what they mean.
var (
	imageReasons = []string{"ErrImagePull", "ImagePullBackOff", "ErrImageNeverPull", "InvalidImageName",
		"ImageInspectError", "RegistryUnavailable", "SignatureValidationFailed"}
	createReasons = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError",
		"PreStartHookError", "PostStartHookError", "ContainerCannotRun"}
	// genericWaiting: the kubelet has not got to the container yet, or
	// is at a pod-level step (sandbox, network, volumes) before it.
	genericWaiting = []string{"", "ContainerCreating", "PodInitializing"}
)

// containerProblem finds the first container that holds the pod: the
// first init container that has not completed, else the first sidecar or
// container that is not ready.
func containerProblem(c *check) (Diagnosis, bool) {
	for i := range c.pod.Spec.InitContainers {
		ctr := &c.pod.Spec.InitContainers[i]
		if podutil.IsSidecar(ctr) {
			continue
		}
		cs := findStatus(c.pod.Status.InitContainerStatuses, ctr.Name)
		if cs != nil && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
			continue
		}
		if cs != nil && cs.State.Running != nil {
			return c.initRunning(ctr), true
		}
		// Later containers do not start before this one completes.
		return c.containerDiagnosis(ctr, cs)
	}
	if d, ok := c.firstNotReady(c.pod.Spec.InitContainers, c.pod.Status.InitContainerStatuses, podutil.IsSidecar); ok {
		return d, true
	}
	return c.firstNotReady(c.pod.Spec.Containers, c.pod.Status.ContainerStatuses, nil)
}

// firstNotReady explains the first container of specs that is not ready,
// among those only selects (nil: all).
func (c *check) firstNotReady(specs []v1.Container, statuses []v1.ContainerStatus, only func(*v1.Container) bool) (Diagnosis, bool) {
	for i := range specs {
		ctr := &specs[i]
		if only != nil && !only(ctr) {
			continue
		}
		cs := findStatus(statuses, ctr.Name)
		if cs != nil && cs.Ready {
			continue
		}
		if d, ok := c.containerDiagnosis(ctr, cs); ok {
			return d, true
		}
	}
	return Diagnosis{}, false
}

func findStatus(list []v1.ContainerStatus, name string) *v1.ContainerStatus {
	for i := range list {
		if list[i].Name == name {
			return &list[i]
		}
	}
	return nil
}

// containerDiagnosis explains one container that is not ready; false if
// it only waits for the kubelet to get to it.
func (c *check) containerDiagnosis(ctr *v1.Container, cs *v1.ContainerStatus) (Diagnosis, bool) {
	switch {
	case cs == nil:
		return Diagnosis{}, false
	case cs.State.Waiting != nil:
		return c.waiting(ctr, cs)
	case cs.State.Running != nil:
		return c.runningNotReady(ctr, cs)
	case cs.State.Terminated != nil:
		return c.exited(ctr, cs), true
	}
	return Diagnosis{}, false
}

// waiting explains a container the kubelet could not start.
func (c *check) waiting(ctr *v1.Container, cs *v1.ContainerStatus) (Diagnosis, bool) {
	w := cs.State.Waiting
	switch {
	case slices.Contains(genericWaiting, w.Reason):
		return Diagnosis{}, false
	case slices.Contains(imageReasons, w.Reason):
		return c.imageProblem(ctr, cs), true
	case w.Reason == "CrashLoopBackOff":
		return c.crashLoop(ctr, cs), true
	}
	d := Diagnosis{Component: Kubelet,
		Summary:  fmt.Sprintf("Pod %s is %s: %s cannot start %s", c.key, c.status(w.Reason), c.kubeletOn(), c.named(ctr)),
		Evidence: []string{describeWaiting(cs)}}
	if slices.Contains(createReasons, w.Reason) && w.Message != "" {
		d.Summary += ": " + w.Message
	}
	if e := c.events.latest(c.ofContainer(ctr.Name, "Failed")); e != nil && !strings.Contains(e.Message, w.Message) {
		d.Evidence = append(d.Evidence, describeEvent(e))
	}
	return d, true
}

// imageProblem: the pull failed; the Failed event carries the registry's
// answer ("Failed to pull image ...: ... not found").
func (c *check) imageProblem(ctr *v1.Container, cs *v1.ContainerStatus) Diagnosis {
	w := cs.State.Waiting
	d := Diagnosis{Component: Kubelet,
		Summary: fmt.Sprintf("Pod %s is %s: %s cannot pull image %q for %s", c.key, c.status(w.Reason), c.kubeletOn(), ctr.Image, c.named(ctr))}
	pulled := c.events.latest(func(e *v1.Event) bool {
		return c.ofContainer(ctr.Name, "Failed", "ErrImageNeverPull", "InspectFailed")(e) && !strings.HasPrefix(e.Message, "Error: ")
	})
	if pulled == nil {
		d.Evidence = []string{describeWaiting(cs)}
		return d
	}
	// The waiting message repeats the pull's error the event carries.
	d.Evidence = []string{fmt.Sprintf("container %s waiting: %s", cs.Name, w.Reason), describeEvent(pulled)}
	if ctr.ImagePullPolicy == v1.PullNever {
		d.Evidence = append(d.Evidence, "imagePullPolicy Never: the image must already be on the node")
	}
	return d
}

// crashLoop: the container exits and the kubelet waits before restarting
// it. The cause is the last termination: OOMKilled, a liveness or startup
// probe that killed it, or its own exit code.
func (c *check) crashLoop(ctr *v1.Container, cs *v1.ContainerStatus) Diagnosis {
	last := cs.LastTerminationState.Terminated
	cause, ev := c.crashCause(ctr, cs)
	d := Diagnosis{Component: Kubelet,
		Summary: fmt.Sprintf("Pod %s is %s: %s %s; %s restarts it with back-off (%s so far)",
			c.key, c.status("CrashLoopBackOff"), c.named(ctr), cause, c.kubeletOn(), plural(int(cs.RestartCount), "restart")),
		Evidence: []string{describeWaiting(cs)}}
	if last != nil {
		d.Evidence = append(d.Evidence, "last state: terminated, "+describeTerminated(last))
	}
	d.Evidence = append(d.Evidence, ev...)
	if lines := c.in.PreviousLogs[ctr.Name]; len(lines) > 0 {
		d.Evidence = append(d.Evidence, fmt.Sprintf("last lines of logs --previous: %s", quoteLines(lines)))
	}
	return d
}

// crashCause says why the container's last instance ended, and the
// events that show it.
func (c *check) crashCause(ctr *v1.Container, cs *v1.ContainerStatus) (string, []string) {
	last := cs.LastTerminationState.Terminated
	if last != nil && last.Reason == "OOMKilled" {
		cause := "was OOMKilled"
		if lim, ok := ctr.Resources.Limits[v1.ResourceMemory]; ok {
			cause += fmt.Sprintf(" (its memory limit is %s)", lim.String())
		}
		return cause, nil
	}
	if kill, kind := c.probeKill(ctr, last); kill != nil {
		ev := []string{describeEvent(kill)}
		if u := c.events.latest(c.probeFailure(ctr.Name, kind)); u != nil {
			ev = append(ev, describeEvent(u))
		}
		return fmt.Sprintf("is killed for failing its %s probe", strings.ToLower(kind)), ev
	}
	if last == nil {
		return "keeps exiting", nil
	}
	return fmt.Sprintf("keeps exiting with code %d", last.ExitCode), nil
}

// restarts describes each container that restarted and why its last
// instance ended: a pod can be Running and Ready between the restarts of a
// container its liveness probe keeps killing.
func (c *check) restarts() []string {
	var out []string
	for _, list := range [][]v1.ContainerStatus{c.pod.Status.InitContainerStatuses, c.pod.Status.ContainerStatuses} {
		for i := range list {
			cs := &list[i]
			last := cs.LastTerminationState.Terminated
			if cs.RestartCount == 0 || last == nil {
				continue
			}
			out = append(out, fmt.Sprintf("container %s restarted %s, last state: terminated, %s", cs.Name, plural(int(cs.RestartCount), "time"), describeTerminated(last)))
			if ctr := c.spec(cs.Name); ctr != nil {
				_, ev := c.crashCause(ctr, cs)
				out = append(out, ev...)
			}
		}
	}
	return out
}

// spec is the pod's init container or container called name.
func (c *check) spec(name string) *v1.Container {
	for _, list := range [][]v1.Container{c.pod.Spec.InitContainers, c.pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// probeKill is the kubelet's Killing event that ended the container's
// last instance for a failed liveness or startup probe ("Container app
// failed liveness probe, will be restarted"), with the probe's kind.
func (c *check) probeKill(ctr *v1.Container, last *v1.ContainerStateTerminated) (*v1.Event, string) {
	for _, kind := range []string{"Liveness", "Startup"} {
		marker := "failed " + strings.ToLower(kind) + " probe"
		e := c.events.latest(func(e *v1.Event) bool {
			return c.ofContainer(ctr.Name, "Killing")(e) && strings.Contains(e.Message, marker)
		})
		if e != nil && (last == nil || last.StartedAt.IsZero() || !eventTime(e).Before(last.StartedAt.Time)) {
			return e, kind
		}
	}
	return nil, ""
}

// probeFailure matches the prober's Unhealthy events of one kind
// ("Readiness probe failed: ...") about the container.
func (c *check) probeFailure(name, kind string) func(*v1.Event) bool {
	return func(e *v1.Event) bool {
		return c.ofContainer(name, "Unhealthy")(e) && strings.HasPrefix(e.Message, kind+" probe")
	}
}

// runningNotReady: started but not ready, so its startup or readiness
// probe has not succeeded.
func (c *check) runningNotReady(ctr *v1.Container, cs *v1.ContainerStatus) (Diagnosis, bool) {
	kind, probe := "Readiness", ctr.ReadinessProbe
	if cs.Started != nil && !*cs.Started && ctr.StartupProbe != nil {
		kind, probe = "Startup", ctr.StartupProbe
	}
	d := Diagnosis{Component: Kubelet, Evidence: []string{fmt.Sprintf("container %s running, ready=false", ctr.Name)}}
	u := c.events.latest(c.probeFailure(ctr.Name, kind))
	switch {
	case u != nil:
		d.Summary = fmt.Sprintf("Pod %s is Running but not Ready: the %s probe of %s fails", c.key, strings.ToLower(kind), c.named(ctr))
		d.Evidence = append(d.Evidence, describeEvent(u))
	case probe != nil:
		d.Summary = fmt.Sprintf("Pod %s is Running but not Ready: the %s probe of %s has not succeeded yet", c.key, strings.ToLower(kind), c.named(ctr))
		if probe.InitialDelaySeconds > 0 {
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s probe initialDelaySeconds %d", strings.ToLower(kind), probe.InitialDelaySeconds))
		}
	default:
		return Diagnosis{}, false // no probe: ready on the kubelet's next status
	}
	return d, true
}

// initRunning: an init container runs; the pod's containers wait for it.
func (c *check) initRunning(ctr *v1.Container) Diagnosis {
	return Diagnosis{Component: Kubelet,
		Summary: fmt.Sprintf("Pod %s is %s: init container %s is still running, and the containers start once it completes", c.key, c.status("PodInitializing"), ctr.Name)}
}

// exited: a container that terminated and is not waiting to restart.
func (c *check) exited(ctr *v1.Container, cs *v1.ContainerStatus) Diagnosis {
	t := cs.State.Terminated
	next := fmt.Sprintf("it is not restarted (restartPolicy %s)", c.pod.Spec.RestartPolicy)
	if podutil.ContainerShouldRestart(ctr, &c.pod.Spec, t.ExitCode) {
		next = c.kubeletOn() + " restarts it"
	}
	return Diagnosis{Component: Kubelet,
		Summary:  fmt.Sprintf("Pod %s is %s: %s has terminated with exit code %d and %s", c.key, c.status(t.Reason), c.named(ctr), t.ExitCode, next),
		Evidence: []string{fmt.Sprintf("container %s terminated: %s", ctr.Name, describeTerminated(t))}}
}

// named is the container as kubectl describe heads it: "init container
// setup", "container app".
func (c *check) named(ctr *v1.Container) string {
	for i := range c.pod.Spec.InitContainers {
		if c.pod.Spec.InitContainers[i].Name == ctr.Name {
			return "init container " + ctr.Name
		}
	}
	return "container " + ctr.Name
}

func describeWaiting(cs *v1.ContainerStatus) string {
	w := cs.State.Waiting
	s := fmt.Sprintf("container %s waiting: %s", cs.Name, w.Reason)
	if w.Message != "" {
		s += fmt.Sprintf(" %q", w.Message)
	}
	return s
}

func describeTerminated(t *v1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Signal != 0 {
		s += fmt.Sprintf(", signal %d", t.Signal)
	}
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if t.Message != "" {
		s += fmt.Sprintf(": %q", t.Message)
	}
	return s
}

// plural is "1 restart", "3 restarts".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

func quoteLines(lines []string) string {
	q := make([]string, len(lines))
	for i, l := range lines {
		q[i] = fmt.Sprintf("%q", l)
	}
	return strings.Join(q, " / ")
}
