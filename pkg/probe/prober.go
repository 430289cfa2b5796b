package probe

import (
	"context"
	"fmt"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// maxRetries is how often a probe that errors (not fails) is retried at
// once, as upstream's maxProbeRetries.
const maxRetries = 3

// EventRecorder is the subset of client-go's record.EventRecorder the
// prober uses.
type EventRecorder interface {
	Eventf(object apiruntime.Object, eventtype, reason, messageFmt string, args ...interface{})
}

// prober runs one probe of one container and reports it as events.
type prober struct {
	exec   Execer
	events EventRecorder
}

// probe runs the container's probe of kind k and returns the result to
// count: errors and failures are reported as Unhealthy events with
// upstream's messages, warnings as ProbeWarning.
func (p *prober) probe(ctx context.Context, k Kind, pod *v1.Pod, podIP string, c *v1.Container, containerID string) (Result, error) {
	spec := probeOf(c, k)
	if spec == nil {
		return Success, nil
	}
	var (
		out     Outcome
		output  string
		err     error
		timeout = time.Duration(spec.TimeoutSeconds) * time.Second
	)
	for i := 0; i < maxRetries; i++ {
		if out, output, err = p.run(ctx, spec, podIP, c, containerID, timeout); err == nil {
			break
		}
	}
	ref := ContainerRef(pod, c.Name)
	switch {
	case err != nil:
		p.events.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe errored and resulted in unknown state: %v", k, err)
		return Unknown, err
	case out == OutcomeFailure, out == OutcomeUnknown: // upstream counts an unknown outcome as a failure
		p.events.Eventf(ref, v1.EventTypeWarning, "Unhealthy", "%s probe failed: %s", k, output)
		return Failure, nil
	case out == OutcomeWarning:
		p.events.Eventf(ref, v1.EventTypeWarning, "ProbeWarning", "%s probe warning: %s", k, output)
	}
	return Success, nil
}

// run picks the handler the probe names.
func (p *prober) run(ctx context.Context, spec *v1.Probe, podIP string, c *v1.Container, containerID string, timeout time.Duration) (Outcome, string, error) {
	h := spec.ProbeHandler
	switch {
	case h.Exec != nil:
		return Exec(ctx, p.exec, containerID, h.Exec.Command, timeout)
	case h.HTTPGet != nil:
		port, err := ResolvePort(h.HTTPGet.Port, c)
		if err != nil {
			return OutcomeUnknown, "", err
		}
		req, err := HTTPRequest(ctx, h.HTTPGet, podIP, port)
		if err != nil {
			return OutcomeUnknown, "", err
		}
		return HTTP(req, timeout)
	case h.TCPSocket != nil:
		port, err := ResolvePort(h.TCPSocket.Port, c)
		if err != nil {
			return OutcomeUnknown, "", err
		}
		host := h.TCPSocket.Host
		if host == "" {
			host = podIP
		}
		return TCP(ctx, host, port, timeout)
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return GRPC(ctx, podIP, int(h.GRPC.Port), service, timeout)
	}
	return OutcomeUnknown, "", fmt.Errorf("missing probe handler for %s", c.Name)
}

// ResolvePort is the port number a probe or hook names, as upstream's
// ResolveContainerPort: a number, a container port's name, or a number
// written as a string.
func ResolvePort(p intstr.IntOrString, c *v1.Container) (int, error) {
	port := int(p.IntVal)
	if p.Type == intstr.String {
		port = -1
		for _, cp := range c.Ports {
			if cp.Name == p.StrVal {
				port = int(cp.ContainerPort)
			}
		}
		if port < 0 {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %s not found", p.StrVal)
			}
			port = n
		}
	}
	if port > 0 && port < 65536 {
		return port, nil
	}
	return 0, fmt.Errorf("invalid port number: %v", port)
}

// ContainerRef is the object container events are about: the pod, with
// the container's field path (spec.containers{name},
// spec.initContainers{name} or spec.ephemeralContainers{name}), as the
// kubelet records them.
func ContainerRef(pod *v1.Pod, name string) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID,
		ResourceVersion: pod.ResourceVersion, FieldPath: fieldPath(pod, name),
	}
}

func fieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return "spec.ephemeralContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
