package podtrace

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// The agent's step names, which are also the OpenTelemetry span names.
const (
	StepSeen      = "Seen"            // the pod reached the pod manager
	StepAdmit     = "Admit"           // node admission
	StepVolume    = "SetUpVolume"     // one volume set up
	StepSandbox   = "RunPodSandbox"   // the sandbox with its network
	StepPull      = "PullImage"       // one container's image (pulled or present)
	StepCreate    = "CreateContainer" // config generation and the CRI call
	StepStart     = "StartContainer"
	StepInitRun   = "InitContainerRun" // an init container's run, as the runtime timed it
	StepPostStart = "PostStartHook"
	StepReady     = "ContainerReady" // a container's first readiness
	StepStatus    = "StatusWritten"  // a status reached the API
)

// Step is one thing the agent did for a pod. End equals Start for an
// instant (something observed rather than done).
type Step struct {
	Name      string            `json:"name"`
	Container string            `json:"container,omitempty"`
	Detail    string            `json:"detail,omitempty"`
	Start     time.Time         `json:"start"`
	End       time.Time         `json:"end"`
	Error     string            `json:"error,omitempty"`
	Attrs     map[string]string `json:"attributes,omitempty"`
}

// Duration is End - Start.
func (s Step) Duration() time.Duration { return s.End.Sub(s.Start) }

// PodRef names the pod a trace belongs to.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
}

// Trace is one pod's recorded steps, ordered by start (the node API's
// JSON answer). DroppedSteps counts steps beyond the per-pod bound.
type Trace struct {
	PodRef
	Steps        []Step `json:"steps"`
	DroppedSteps int    `json:"droppedSteps,omitempty"`
}

// sortSteps orders by start, keeping the recording order of equal starts
// (a step recorded first happened first).
func sortSteps(steps []Step) {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].Start.Before(steps[j].Start) })
}
