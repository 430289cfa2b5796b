package runtime

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the subset of the CRI runtime service the agent uses. Its
// method set matches k8s.io/cri-api's RuntimeService so that the cri-api
// testing fakes satisfy it.
type Runtime interface {
	Version(ctx context.Context, apiVersion string) (*criv1.VersionResponse, error)
	Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error)
	RunPodSandbox(ctx context.Context, config *criv1.PodSandboxConfig, runtimeHandler string) (string, error)
	StopPodSandbox(ctx context.Context, podSandboxID string) error
	RemovePodSandbox(ctx context.Context, podSandboxID string) error
	PodSandboxStatus(ctx context.Context, podSandboxID string, verbose bool) (*criv1.PodSandboxStatusResponse, error)
	ListPodSandbox(ctx context.Context, filter *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error)
	CreateContainer(ctx context.Context, podSandboxID string, config *criv1.ContainerConfig, sandboxConfig *criv1.PodSandboxConfig) (string, error)
	StartContainer(ctx context.Context, containerID string) error
	StopContainer(ctx context.Context, containerID string, timeout int64) error
	RemoveContainer(ctx context.Context, containerID string) error
	ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*criv1.ContainerStatusResponse, error)
}

// Images is the subset of the CRI image service the agent uses.
type Images interface {
	ImageStatus(ctx context.Context, image *criv1.ImageSpec, verbose bool) (*criv1.ImageStatusResponse, error)
	PullImage(ctx context.Context, image *criv1.ImageSpec, auth *criv1.AuthConfig, podSandboxConfig *criv1.PodSandboxConfig) (string, error)
}

// Client talks CRI v1 over gRPC. Every call gets the client's timeout unless
// the caller's context ends sooner; image pulls get the pull timeout.
type Client struct {
	conn        *grpc.ClientConn
	rt          criv1.RuntimeServiceClient
	img         criv1.ImageServiceClient
	timeout     time.Duration
	pullTimeout time.Duration
}

var _ Runtime = (*Client)(nil)
var _ Images = (*Client)(nil)

// maxMsgSize matches the kubelet's CRI client limit (16 MiB).
const maxMsgSize = 16 * 1024 * 1024

// Dial sets up a connection to a CRI endpoint such as
// unix:///run/containerd/containerd.sock; the connection is made lazily,
// so call Version to check the runtime answers. timeout bounds each call.
func Dial(ctx context.Context, endpoint string, timeout time.Duration, opts ...DialOption) (*Client, error) {
	target, err := grpcTarget(endpoint)
	if err != nil {
		return nil, err
	}
	var o dialOptions
	for _, opt := range opts {
		opt(&o)
	}
	conn, err := grpc.NewClient(target, append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize)),
	}, o.grpcOptions()...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to CRI endpoint %s: %w", endpoint, err)
	}
	c := &Client{
		conn:        conn,
		rt:          criv1.NewRuntimeServiceClient(conn),
		img:         criv1.NewImageServiceClient(conn),
		timeout:     timeout,
		pullTimeout: 10 * time.Minute,
	}
	return c, nil
}

// grpcTarget turns a kubelet-style endpoint into a gRPC target.
func grpcTarget(endpoint string) (string, error) {
	switch {
	case strings.HasPrefix(endpoint, "unix://"):
		return endpoint, nil
	case strings.HasPrefix(endpoint, "/"):
		return "unix://" + endpoint, nil
	default:
		return "", fmt.Errorf("CRI endpoint %q: only unix sockets are supported (unix:///path)", endpoint)
	}
}

// Close releases the connection.
func (c *Client) Close() error { return c.conn.Close() }

func (c *Client) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.timeout)
}

func (c *Client) Version(ctx context.Context, apiVersion string) (*criv1.VersionResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Version(ctx, &criv1.VersionRequest{Version: apiVersion})
	if err != nil {
		return nil, fmt.Errorf("CRI version: %w", err)
	}
	return resp, nil
}

func (c *Client) Status(ctx context.Context, verbose bool) (*criv1.StatusResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.Status(ctx, &criv1.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("CRI status: %w", err)
	}
	return resp, nil
}

func (c *Client) RunPodSandbox(ctx context.Context, config *criv1.PodSandboxConfig, runtimeHandler string) (string, error) {
	// Sandbox creation includes CNI set-up: allow it twice the usual time,
	// as the kubelet does.
	ctx, cancel := context.WithTimeout(ctx, 2*c.timeout)
	defer cancel()
	resp, err := c.rt.RunPodSandbox(ctx, &criv1.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", fmt.Errorf("run pod sandbox: %w", err)
	}
	return resp.PodSandboxId, nil
}

func (c *Client) StopPodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.StopPodSandbox(ctx, &criv1.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("stop pod sandbox %s: %w", id, err)
	}
	return nil
}

func (c *Client) RemovePodSandbox(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.RemovePodSandbox(ctx, &criv1.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		return fmt.Errorf("remove pod sandbox %s: %w", id, err)
	}
	return nil
}

func (c *Client) PodSandboxStatus(ctx context.Context, id string, verbose bool) (*criv1.PodSandboxStatusResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.PodSandboxStatus(ctx, &criv1.PodSandboxStatusRequest{PodSandboxId: id, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("pod sandbox status %s: %w", id, err)
	}
	return resp, nil
}

func (c *Client) ListPodSandbox(ctx context.Context, filter *criv1.PodSandboxFilter) ([]*criv1.PodSandbox, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.ListPodSandbox(ctx, &criv1.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list pod sandboxes: %w", err)
	}
	return resp.Items, nil
}

func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *criv1.ContainerConfig, sandboxConfig *criv1.PodSandboxConfig) (string, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.CreateContainer(ctx, &criv1.CreateContainerRequest{PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", fmt.Errorf("create container %s: %w", config.GetMetadata().GetName(), err)
	}
	return resp.ContainerId, nil
}

func (c *Client) StartContainer(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.StartContainer(ctx, &criv1.StartContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("start container %s: %w", id, err)
	}
	return nil
}

// StopContainer waits up to the grace period (timeout seconds) on top of the
// call timeout, since the runtime blocks until the container is gone.
func (c *Client) StopContainer(ctx context.Context, id string, timeout int64) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+time.Duration(timeout)*time.Second)
	defer cancel()
	if _, err := c.rt.StopContainer(ctx, &criv1.StopContainerRequest{ContainerId: id, Timeout: timeout}); err != nil {
		return fmt.Errorf("stop container %s: %w", id, err)
	}
	return nil
}

func (c *Client) RemoveContainer(ctx context.Context, id string) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	if _, err := c.rt.RemoveContainer(ctx, &criv1.RemoveContainerRequest{ContainerId: id}); err != nil {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

func (c *Client) ListContainers(ctx context.Context, filter *criv1.ContainerFilter) ([]*criv1.Container, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.ListContainers(ctx, &criv1.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, fmt.Errorf("list containers: %w", err)
	}
	return resp.Containers, nil
}

func (c *Client) ContainerStatus(ctx context.Context, id string, verbose bool) (*criv1.ContainerStatusResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.rt.ContainerStatus(ctx, &criv1.ContainerStatusRequest{ContainerId: id, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("container status %s: %w", id, err)
	}
	return resp, nil
}

// UpdateContainerResources changes a running container's cgroup limits
// (in-place resize).
func (c *Client) UpdateContainerResources(ctx context.Context, id string, resources *criv1.ContainerResources) error {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	req := &criv1.UpdateContainerResourcesRequest{ContainerId: id, Linux: resources.GetLinux(), Windows: resources.GetWindows()}
	if _, err := c.rt.UpdateContainerResources(ctx, req); err != nil {
		return fmt.Errorf("update container resources %s: %w", id, err)
	}
	return nil
}

func (c *Client) ImageStatus(ctx context.Context, image *criv1.ImageSpec, verbose bool) (*criv1.ImageStatusResponse, error) {
	ctx, cancel := c.ctx(ctx)
	defer cancel()
	resp, err := c.img.ImageStatus(ctx, &criv1.ImageStatusRequest{Image: image, Verbose: verbose})
	if err != nil {
		return nil, fmt.Errorf("image status %s: %w", image.GetImage(), err)
	}
	return resp, nil
}

func (c *Client) PullImage(ctx context.Context, image *criv1.ImageSpec, auth *criv1.AuthConfig, sandboxConfig *criv1.PodSandboxConfig) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, c.pullTimeout)
	defer cancel()
	resp, err := c.img.PullImage(ctx, &criv1.PullImageRequest{Image: image, Auth: auth, SandboxConfig: sandboxConfig})
	if err != nil {
		return "", err
	}
	return resp.ImageRef, nil
}

// ImageServiceClient exposes the raw image service for tools and tests
// that need calls the agent does not make (RemoveImage).
func (c *Client) ImageServiceClient() criv1.ImageServiceClient { return c.img }

// ExecResult is the outcome of a command run with ExecSync.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int32
}

// ExecSync runs cmd in a running container and waits for it. The runtime
// enforces timeout (0: none); the call's own deadline adds the client's
// timeout so that the runtime can report the timeout itself, as the
// kubelet's remote runtime does.
func (c *Client) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecResult, error) {
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.timeout+timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	resp, err := c.rt.ExecSync(ctx, &criv1.ExecSyncRequest{
		ContainerId: id, Cmd: cmd, Timeout: int64(timeout.Round(time.Second) / time.Second),
	})
	if err != nil {
		return nil, fmt.Errorf("exec in container %s: %w", id, err)
	}
	return &ExecResult{Stdout: resp.Stdout, Stderr: resp.Stderr, ExitCode: resp.ExitCode}, nil
}
