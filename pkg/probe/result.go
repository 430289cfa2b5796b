package probe

import v1 "k8s.io/api/core/v1"

// Kind is a probe's purpose; its string is the word upstream's events use.
type Kind string

const (
	Liveness  Kind = "Liveness"
	Readiness Kind = "Readiness"
	Startup   Kind = "Startup"
)

// Result is a cached probe outcome.
type Result int

const (
	Unknown Result = iota
	Success
	Failure
)

func (r Result) String() string {
	switch r {
	case Success:
		return "Success"
	case Failure:
		return "Failure"
	}
	return "Unknown"
}

// Outcome is what one handler run gives: Warning counts as success but is
// reported (an HTTP redirect the prober did not follow).
type Outcome int

const (
	OutcomeSuccess Outcome = iota
	OutcomeWarning
	OutcomeFailure
	OutcomeUnknown
)

// initialResult is what a worker reports for a new container before its
// first probe: not ready, alive, not yet started.
func initialResult(k Kind) Result {
	switch k {
	case Readiness:
		return Failure
	case Liveness:
		return Success
	}
	return Unknown
}

// probeOf is the container's probe of that kind, or nil.
func probeOf(c *v1.Container, k Kind) *v1.Probe {
	switch k {
	case Liveness:
		return c.LivenessProbe
	case Readiness:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}
