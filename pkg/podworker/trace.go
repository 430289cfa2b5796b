package podworker

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/podtrace"
	"github.com/nodeagent/nodeagent/pkg/runtime"
	"github.com/nodeagent/nodeagent/pkg/volume"
)

// Tracer keeps the steps of each pod's start (pkg/podtrace.Log).
type Tracer interface {
	Record(pod *v1.Pod, s podtrace.Step)
	// StatusGenerated marks when a status was generated, which the status
	// manager's write later completes.
	StatusGenerated(pod *v1.Pod, status *v1.PodStatus)
	// PodGone: the pod's worker ended.
	PodGone(uid types.UID)
}

type noTracer struct{}

func (noTracer) Record(*v1.Pod, podtrace.Step)          {}
func (noTracer) StatusGenerated(*v1.Pod, *v1.PodStatus) {}
func (noTracer) PodGone(types.UID)                      {}

// traceStep records s, ending now, failed with err if set.
func traceStep(t Tracer, now time.Time, pod *v1.Pod, s podtrace.Step, err error) {
	s.End = now
	if err != nil {
		s.Error = err.Error()
	}
	t.Record(pod, s)
}

func (w *worker) step(pod *v1.Pod, s podtrace.Step, err error) {
	traceStep(w.d.tracer, w.d.now(), pod, s, err)
}

// traceVolumes has each volume set up under ctx recorded as a step.
func (w *worker) traceVolumes(ctx context.Context, pod *v1.Pod) context.Context {
	return volume.WithSetUpObserver(ctx, func(name, plugin string, start time.Time, err error) {
		w.step(pod, podtrace.Step{Name: podtrace.StepVolume, Start: start, Detail: fmt.Sprintf("volume %q (%s)", name, plugin),
			Attrs: map[string]string{"volume": name, "plugin": plugin}}, err)
	})
}

// sandboxStep describes a sandbox made between start and end. The CRI does
// not time the pod network (CNI ADD runs inside the runtime); the one
// timestamp it gives inside the call is the sandbox's createdAt, which
// the step shows as an offset without claiming which part is CNI.
func sandboxStep(pod *v1.Pod, start, end time.Time, id string, st *criv1.PodSandboxStatus) podtrace.Step {
	s := podtrace.Step{Name: podtrace.StepSandbox, Start: start, End: end, Attrs: map[string]string{"sandbox.id": id}}
	ips := runtime.SandboxIPs(st)
	s.Detail = fmt.Sprintf("sandbox %s", shortID(id))
	if len(ips) > 0 {
		s.Detail += ", IP " + strings.Join(ips, ",")
	}
	created := time.Unix(0, st.GetCreatedAt())
	switch {
	case pod.Spec.HostNetwork:
		s.Detail += "; host network (no CNI)"
	case st.GetCreatedAt() > 0 && !created.Before(start) && !created.After(end):
		at := created.Sub(start)
		s.Attrs["sandbox.created.offset"] = at.String()
		s.Detail += fmt.Sprintf("; runtime's createdAt at +%s (the CRI does not time CNI apart)", at.Round(time.Millisecond))
	}
	return s
}

func shortID(id string) string {
	if len(id) > 13 {
		return id[:13]
	}
	return id
}

// containerKind names init containers and sidecars in details.
func containerKind(pod *v1.Pod, name string) string {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			if pod.Spec.InitContainers[i].RestartPolicy != nil {
				return "sidecar container"
			}
			return "init container"
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			return "ephemeral container"
		}
	}
	return "container"
}

// traceStatus records what a generated status shows for the first time:
// an init container's run (as the runtime timed it) and each container's
// first readiness; and marks the status as generated.
func (w *worker) traceStatus(pod *v1.Pod, st *runtime.PodStatus, status *v1.PodStatus) {
	if _, off := w.d.tracer.(noTracer); off {
		return
	}
	for _, cs := range status.InitContainerStatuses {
		c := st.Latest(cs.Name)
		if c == nil || c.State != criv1.ContainerState_CONTAINER_EXITED || !w.firstTrace("exit/"+c.ID) {
			continue
		}
		w.d.tracer.Record(pod, podtrace.Step{Name: podtrace.StepInitRun, Container: cs.Name, Start: c.StartedAt, End: c.FinishedAt,
			Detail: fmt.Sprintf("exited with code %d", c.ExitCode), Attrs: map[string]string{"exit.code": fmt.Sprint(c.ExitCode)}})
	}
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses} {
		for _, cs := range list {
			// A finished init container is ready too, but was never probed.
			if cs.Ready && containerKind(pod, cs.Name) != "init container" && w.firstTrace("ready/"+cs.Name) {
				w.step(pod, podtrace.Step{Name: podtrace.StepReady, Container: cs.Name, Start: w.d.now(), Detail: readyDetail(pod, cs.Name)}, nil)
			}
		}
	}
	w.d.tracer.StatusGenerated(pod, status)
}

func readyDetail(pod *v1.Pod, name string) string {
	for _, c := range append(append([]v1.Container(nil), pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if c.Name == name && c.ReadinessProbe != nil {
			return "readiness probe succeeded"
		}
	}
	return "ready once started (no readiness probe)"
}

// firstTrace tells whether key is traced for the first time.
func (w *worker) firstTrace(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.traced == nil {
		w.traced = map[string]bool{}
	}
	if w.traced[key] {
		return false
	}
	w.traced[key] = true
	return true
}

// hookKind names a lifecycle handler's action.
func hookKind(h *v1.LifecycleHandler) string {
	switch {
	case h.Exec != nil:
		return "exec"
	case h.HTTPGet != nil:
		return "httpGet"
	case h.TCPSocket != nil:
		return "tcpSocket"
	case h.Sleep != nil:
		return "sleep"
	}
	return ""
}

// traceAdmission records node admission's answer.
func traceAdmission(t Tracer, start, end time.Time, pod *v1.Pod, r AdmitResult) {
	s := podtrace.Step{Name: podtrace.StepAdmit, Start: start, Detail: "admitted"}
	var err error
	if !r.Admit {
		s.Detail, err = "rejected", fmt.Errorf("%s: %s", r.Reason, r.Message)
	}
	traceStep(t, end, pod, s, err)
}
