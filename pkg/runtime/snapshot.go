package runtime

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// SandboxStatus is what the agent needs to know about one pod sandbox.
type SandboxStatus struct {
	ID        string
	Attempt   uint32
	State     criv1.PodSandboxState
	CreatedAt time.Time
	IPs       []string
	HostNet   bool
	// Hash is the AnnotationSandboxHash the sandbox was created with, ""
	// when unknown (made by another agent).
	Hash string
}

// ContainerStatus is what the agent needs to know about one container.
type ContainerStatus struct {
	ID           string
	SandboxID    string
	Name         string
	Attempt      uint32
	RestartCount int
	Hash         string
	State        criv1.ContainerState
	CreatedAt    time.Time
	StartedAt    time.Time
	FinishedAt   time.Time
	ExitCode     int32
	Reason       string
	Message      string
	Image        string
	ImageRef     string
	LogPath      string
	Mounts       []*criv1.Mount
	// User is the process identity the runtime reports (runtimes that
	// support supplementalGroupsPolicy do; containerd 1.6 does not).
	User *criv1.ContainerUser

	TerminationMessagePath   string
	TerminationMessagePolicy string
	// GracePeriod is the pod's terminationGracePeriodSeconds when the
	// container was made, -1 when not recorded: what an agent that lost
	// the pod's spec stops it with.
	GracePeriod int64
}

// PodStatus is the runtime's view of one pod: every sandbox and container
// carrying its UID, newest first.
type PodStatus struct {
	Ref        PodRef
	Sandboxes  []*SandboxStatus
	Containers []*ContainerStatus
}

// ActiveSandbox is the newest sandbox when it is ready, else nil.
func (s *PodStatus) ActiveSandbox() *SandboxStatus {
	if len(s.Sandboxes) == 0 || s.Sandboxes[0].State != criv1.PodSandboxState_SANDBOX_READY {
		return nil
	}
	return s.Sandboxes[0]
}

// Latest returns the newest container of the given name, or nil.
func (s *PodStatus) Latest(name string) *ContainerStatus {
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// Previous returns the second-newest container of the given name, or nil.
func (s *PodStatus) Previous(name string) *ContainerStatus {
	seen := false
	for _, c := range s.Containers {
		if c.Name != name {
			continue
		}
		if seen {
			return c
		}
		seen = true
	}
	return nil
}

// Running lists the running containers.
func (s *PodStatus) Running() []*ContainerStatus {
	var out []*ContainerStatus
	for _, c := range s.Containers {
		if c.State == criv1.ContainerState_CONTAINER_RUNNING {
			out = append(out, c)
		}
	}
	return out
}

// GetPodStatus reads one pod's sandboxes and containers from the runtime.
func GetPodStatus(ctx context.Context, rt Runtime, ref PodRef) (*PodStatus, error) {
	sel := map[string]string{LabelPodUID: string(ref.UID)}
	sandboxes, err := rt.ListPodSandbox(ctx, &criv1.PodSandboxFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	out := &PodStatus{Ref: ref}
	for _, sb := range sandboxes {
		st, err := sandboxStatus(ctx, rt, sb)
		if err != nil {
			return nil, err
		}
		out.Sandboxes = append(out.Sandboxes, st)
	}
	sort.SliceStable(out.Sandboxes, func(i, j int) bool {
		return out.Sandboxes[i].CreatedAt.After(out.Sandboxes[j].CreatedAt)
	})
	containers, err := rt.ListContainers(ctx, &criv1.ContainerFilter{LabelSelector: sel})
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		resp, err := rt.ContainerStatus(ctx, c.Id, false)
		if IsNotFound(err) {
			continue // removed between list and status
		}
		if err != nil {
			return nil, err
		}
		out.Containers = append(out.Containers, convertContainer(c, resp.GetStatus()))
	}
	sort.SliceStable(out.Containers, func(i, j int) bool {
		return out.Containers[i].CreatedAt.After(out.Containers[j].CreatedAt)
	})
	return out, nil
}

func sandboxStatus(ctx context.Context, rt Runtime, sb *criv1.PodSandbox) (*SandboxStatus, error) {
	st := &SandboxStatus{
		ID:        sb.Id,
		Attempt:   sb.GetMetadata().GetAttempt(),
		State:     sb.State,
		CreatedAt: time.Unix(0, sb.CreatedAt),
		Hash:      sb.Annotations[AnnotationSandboxHash],
	}
	if sb.State != criv1.PodSandboxState_SANDBOX_READY {
		return st, nil
	}
	resp, err := rt.PodSandboxStatus(ctx, sb.Id, false)
	if IsNotFound(err) {
		st.State = criv1.PodSandboxState_SANDBOX_NOTREADY
		return st, nil
	}
	if err != nil {
		return nil, err
	}
	s := resp.GetStatus()
	st.State = s.GetState()
	st.HostNet = s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == criv1.NamespaceMode_NODE
	st.IPs = SandboxIPs(s)
	return st, nil
}

// SandboxIPs lists a sandbox's IPs, primary first.
func SandboxIPs(s *criv1.PodSandboxStatus) []string {
	var ips []string
	if ip := s.GetNetwork().GetIp(); ip != "" {
		ips = append(ips, ip)
	}
	for _, ip := range s.GetNetwork().GetAdditionalIps() {
		ips = append(ips, ip.GetIp())
	}
	return ips
}

func convertContainer(c *criv1.Container, s *criv1.ContainerStatus) *ContainerStatus {
	a := c.Annotations
	out := &ContainerStatus{
		ID:                       c.Id,
		SandboxID:                c.PodSandboxId,
		Name:                     c.GetMetadata().GetName(),
		Attempt:                  c.GetMetadata().GetAttempt(),
		RestartCount:             annotationInt(a, AnnotationRestartCount),
		Hash:                     a[AnnotationContainerHash],
		State:                    c.State,
		CreatedAt:                time.Unix(0, c.CreatedAt),
		Image:                    c.GetImage().GetImage(),
		ImageRef:                 c.ImageRef,
		TerminationMessagePath:   a[AnnotationTerminationMessagePath],
		TerminationMessagePolicy: a[AnnotationTerminationMessagePolicy],
		GracePeriod:              annotationInt64(a, AnnotationPodTerminationGracePeriod, -1),
	}
	if s == nil {
		return out
	}
	out.State = s.State
	out.StartedAt = unixNano(s.StartedAt)
	out.FinishedAt = unixNano(s.FinishedAt)
	out.ExitCode = s.ExitCode
	out.Reason = s.Reason
	out.Message = s.Message
	out.LogPath = s.LogPath
	out.Mounts = s.Mounts
	out.User = s.GetUser()
	if s.GetImage().GetImage() != "" {
		out.Image = s.GetImage().GetImage()
	}
	if s.ImageRef != "" {
		out.ImageRef = s.ImageRef
	}
	return out
}

func unixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// ListPodRefs returns every pod the runtime holds objects for, so the agent
// can find pods it no longer knows.
func ListPodRefs(ctx context.Context, rt Runtime) (map[types.UID]PodRef, error) {
	refs := map[types.UID]PodRef{}
	sandboxes, err := rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, sb := range sandboxes {
		if ref, ok := PodRefFromLabels(sb.Labels); ok {
			refs[ref.UID] = ref
		}
	}
	containers, err := rt.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	for _, c := range containers {
		if ref, ok := PodRefFromLabels(c.Labels); ok {
			refs[ref.UID] = ref
		}
	}
	return refs, nil
}

// IsNotFound reports whether a CRI error means the object does not exist.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	var se interface{ GRPCStatus() *status.Status }
	if errors.As(err, &se) {
		return se.GRPCStatus().Code() == codes.NotFound
	}
	return false
}

// describe is a short form for logs.
func (c *ContainerStatus) String() string {
	return fmt.Sprintf("%s(%.12s,%s,restarts=%d)", c.Name, c.ID, c.State, c.RestartCount)
}
