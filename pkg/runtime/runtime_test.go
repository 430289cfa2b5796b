package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
	critest "k8s.io/cri-api/pkg/apis/testing"
)

func testPod() *v1.Pod {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "shop", "uid-1"
	pod.Labels = map[string]string{"app": "web", LabelPodName: "spoofed"}
	pod.Annotations = map[string]string{"a": "b"}
	pod.Spec.Containers = []v1.Container{{Name: "c", Image: "busybox:1"}}
	return pod
}

func TestLabelsRoundTrip(t *testing.T) {
	pod := testPod()
	want := PodRef{UID: "uid-1", Name: "web", Namespace: "shop"}

	sl := SandboxLabels(pod)
	if sl["app"] != "web" || sl[LabelPodName] != "web" || sl[LabelPodNamespace] != "shop" || sl[LabelPodUID] != "uid-1" {
		t.Errorf("sandbox labels = %v (the kubelet's keys must win over the pod's)", sl)
	}
	if pod.Labels[LabelPodName] != "spoofed" {
		t.Error("SandboxLabels modified the pod's labels")
	}
	if !reflect.DeepEqual(SandboxAnnotations(pod), map[string]string{"a": "b"}) {
		t.Errorf("sandbox annotations = %v", SandboxAnnotations(pod))
	}
	cl := ContainerLabels(pod, &pod.Spec.Containers[0])
	wantCL := map[string]string{LabelPodName: "web", LabelPodNamespace: "shop", LabelPodUID: "uid-1",
		LabelContainerName: "c"}
	if !reflect.DeepEqual(cl, wantCL) {
		t.Errorf("container labels = %v, want %v", cl, wantCL)
	}
	for name, labels := range map[string]map[string]string{"sandbox": sl, "container": cl} {
		if got, ok := PodRefFromLabels(labels); !ok || got != want {
			t.Errorf("%s: PodRefFromLabels = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, labels := range []map[string]string{nil, {}, {LabelPodName: "web", LabelPodNamespace: "shop"}} {
		if _, ok := PodRefFromLabels(labels); ok {
			t.Errorf("PodRefFromLabels(%v) ok without a UID", labels)
		}
	}
}

func TestContainerAnnotations(t *testing.T) {
	pod := testPod()
	pod.DeletionGracePeriodSeconds = ptr(int64(5))
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	c := &pod.Spec.Containers[0]
	c.TerminationMessagePath, c.TerminationMessagePolicy = "/dev/termination-log", v1.TerminationMessageFallbackToLogsOnError
	c.Ports = []v1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: v1.ProtocolTCP}}
	c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sleep", "1"}}}}
	a := ContainerAnnotations(pod, c, 4)
	want := map[string]string{
		AnnotationContainerHash:             HashContainer(c),
		AnnotationRestartCount:              "4",
		AnnotationTerminationMessagePath:    "/dev/termination-log",
		AnnotationTerminationMessagePolicy:  "FallbackToLogsOnError",
		AnnotationPodDeletionGracePeriod:    "5",
		AnnotationPodTerminationGracePeriod: "30",
		AnnotationContainerPreStopHandler:   `{"exec":{"command":["sleep","1"]}}`,
		AnnotationContainerPorts:            `[{"name":"http","containerPort":80,"protocol":"TCP"}]`,
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("annotations\n got: %v\nwant: %v", a, want)
	}
	bare := ContainerAnnotations(testPod(), &v1.Container{Name: "x"}, 0)
	for _, k := range []string{AnnotationPodDeletionGracePeriod, AnnotationPodTerminationGracePeriod, AnnotationContainerPreStopHandler, AnnotationContainerPorts} {
		if _, ok := bare[k]; ok {
			t.Errorf("unset %s should be absent: %v", k, bare)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestHashContainer(t *testing.T) {
	c := &v1.Container{Name: "c", Image: "busybox:1", Command: []string{"sh"}, Env: []v1.EnvVar{{Name: "A", Value: "1"}}}
	h := HashContainer(c)
	if _, err := strconv.ParseUint(h, 16, 32); err != nil {
		t.Errorf("hash %q is not 32-bit hex: %v", h, err)
	}
	if HashContainer(c) != h || HashContainer(c.DeepCopy()) != h {
		t.Error("hash not stable across calls and copies")
	}
	for name, change := range map[string]func(*v1.Container){
		"image":   func(c *v1.Container) { c.Image = "busybox:2" },
		"name":    func(c *v1.Container) { c.Name = "d" },
		"command": func(c *v1.Container) { c.Command = []string{"bash"} },
	} {
		cp := c.DeepCopy()
		change(cp)
		if HashContainer(cp) == h {
			t.Errorf("changing the %s keeps the hash", name)
		}
	}
	// Resources change in place (pods/resize): the container stays.
	cp := c.DeepCopy()
	cp.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	cp.ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceCPU, RestartPolicy: v1.NotRequired}}
	if HashContainer(cp) != h {
		t.Error("changing the resources changes the hash")
	}
	if HashContainerWithResources(cp) == h {
		t.Error("the hash with resources is the hash without")
	}
}

func TestLogPaths(t *testing.T) {
	if got := PodLogsDir("/var/log/pods", "shop", "web", "uid-1"); got != "/var/log/pods/shop_web_uid-1" {
		t.Errorf("PodLogsDir = %q", got)
	}
	for _, tc := range []struct {
		container string
		n         int
		want      string
	}{{"c", 0, "c/0.log"}, {"sidecar", 12, "sidecar/12.log"}} {
		if got := ContainerLogPath(tc.container, tc.n); got != tc.want {
			t.Errorf("ContainerLogPath(%q, %d) = %q, want %q", tc.container, tc.n, got, tc.want)
		}
	}
}

// fakeWithPod fills a fake runtime with one pod's history: an old dead
// sandbox, the current one, two instances of container "a" and one "b",
// plus another pod's objects.
func fakeWithPod(t *testing.T) *critest.FakeRuntimeService {
	t.Helper()
	pod := testPod()
	sbLabels := SandboxLabels(pod)
	sb := func(id string, attempt uint32, created int64, state criv1.PodSandboxState, labels map[string]string) *critest.FakePodSandbox {
		return &critest.FakePodSandbox{PodSandboxStatus: criv1.PodSandboxStatus{
			Id: id, Metadata: &criv1.PodSandboxMetadata{Name: "web", Namespace: "shop", Uid: "uid-1", Attempt: attempt},
			State: state, CreatedAt: created, Labels: labels,
			Network: &criv1.PodSandboxNetworkStatus{Ip: "10.0.0.9", AdditionalIps: []*criv1.PodIP{{Ip: "fd00::9"}}},
			Linux: &criv1.LinuxPodSandboxStatus{Namespaces: &criv1.Namespace{Options: &criv1.NamespaceOption{
				Network: criv1.NamespaceMode_POD}}},
		}}
	}
	other := map[string]string{LabelPodUID: "uid-other", LabelPodName: "other", LabelPodNamespace: "shop"}
	rt := critest.NewFakeRuntimeService()
	rt.SetFakeSandboxes([]*critest.FakePodSandbox{
		sb("sb-old", 0, 100, criv1.PodSandboxState_SANDBOX_NOTREADY, sbLabels),
		sb("sb-new", 1, 200, criv1.PodSandboxState_SANDBOX_READY, sbLabels),
		sb("sb-other", 0, 300, criv1.PodSandboxState_SANDBOX_READY, other),
	})
	ctr := func(id, name string, attempt uint32, created int64, state criv1.ContainerState, restarts int, labels map[string]string) *critest.FakeContainer {
		return &critest.FakeContainer{SandboxID: "sb-new", ContainerStatus: criv1.ContainerStatus{
			Id: id, Metadata: &criv1.ContainerMetadata{Name: name, Attempt: attempt}, State: state, CreatedAt: created,
			StartedAt: created + 1, FinishedAt: map[bool]int64{true: created + 2}[state == criv1.ContainerState_CONTAINER_EXITED],
			ExitCode: map[bool]int32{true: 3}[state == criv1.ContainerState_CONTAINER_EXITED],
			Reason:   map[bool]string{true: "Error"}[state == criv1.ContainerState_CONTAINER_EXITED],
			Image:    &criv1.ImageSpec{Image: "busybox:1"}, ImageRef: "sha256:beef", LogPath: name + "/" + strconv.Itoa(restarts) + ".log",
			Labels: labels,
			Annotations: map[string]string{AnnotationRestartCount: strconv.Itoa(restarts), AnnotationContainerHash: "h-" + name,
				AnnotationTerminationMessagePath: "/dev/termination-log"},
		}}
	}
	la := ContainerLabels(pod, &v1.Container{Name: "a"})
	lb := ContainerLabels(pod, &v1.Container{Name: "b"})
	rt.SetFakeContainers([]*critest.FakeContainer{
		ctr("a0", "a", 0, 1000, criv1.ContainerState_CONTAINER_EXITED, 0, la),
		ctr("b0", "b", 0, 2000, criv1.ContainerState_CONTAINER_RUNNING, 0, lb),
		ctr("a1", "a", 1, 3000, criv1.ContainerState_CONTAINER_RUNNING, 1, la),
		ctr("x0", "x", 0, 4000, criv1.ContainerState_CONTAINER_RUNNING, 0, other),
	})
	return rt
}

func TestGetPodStatus(t *testing.T) {
	rt := fakeWithPod(t)
	ref := PodRef{UID: "uid-1", Name: "web", Namespace: "shop"}
	st, err := GetPodStatus(context.Background(), rt, ref)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ref != ref {
		t.Errorf("ref = %v", st.Ref)
	}
	var sbIDs, cIDs []string
	for _, s := range st.Sandboxes {
		sbIDs = append(sbIDs, s.ID)
	}
	for _, c := range st.Containers {
		cIDs = append(cIDs, c.ID)
	}
	if !reflect.DeepEqual(sbIDs, []string{"sb-new", "sb-old"}) || !reflect.DeepEqual(cIDs, []string{"a1", "b0", "a0"}) {
		t.Fatalf("newest first: sandboxes %v containers %v", sbIDs, cIDs)
	}
	active := st.ActiveSandbox()
	wantSB := &SandboxStatus{ID: "sb-new", Attempt: 1, State: criv1.PodSandboxState_SANDBOX_READY,
		CreatedAt: time.Unix(0, 200), IPs: []string{"10.0.0.9", "fd00::9"}}
	if !reflect.DeepEqual(active, wantSB) {
		t.Errorf("active sandbox = %+v, want %+v", active, wantSB)
	}
	if old := st.Sandboxes[1]; old.IPs != nil || old.State != criv1.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("a dead sandbox is not inspected: %+v", old)
	}
	if l, p := st.Latest("a"), st.Previous("a"); l == nil || l.ID != "a1" || p == nil || p.ID != "a0" {
		t.Errorf("Latest/Previous(a) = %v / %v", l, p)
	}
	if st.Previous("b") != nil || st.Latest("zz") != nil || st.Previous("zz") != nil {
		t.Error("Previous(b), Latest(zz), Previous(zz) should be nil")
	}
	a0 := st.Previous("a")
	wantA0 := &ContainerStatus{ID: "a0", SandboxID: "sb-new", Name: "a", Hash: "h-a",
		State: criv1.ContainerState_CONTAINER_EXITED, CreatedAt: time.Unix(0, 1000), StartedAt: time.Unix(0, 1001),
		FinishedAt: time.Unix(0, 1002), ExitCode: 3, Reason: "Error", Image: "busybox:1", ImageRef: "sha256:beef",
		LogPath: "a/0.log", TerminationMessagePath: "/dev/termination-log", GracePeriod: -1}
	if !reflect.DeepEqual(a0, wantA0) {
		t.Errorf("converted container\n got: %+v\nwant: %+v", a0, wantA0)
	}
	if b := st.Latest("b"); !b.FinishedAt.IsZero() {
		t.Errorf("b: finishedAt %v", b.FinishedAt)
	}
	if a1 := st.Latest("a"); a1.RestartCount != 1 || a1.Attempt != 1 {
		t.Errorf("a1 restartCount/attempt = %d/%d", a1.RestartCount, a1.Attempt)
	}
	var running []string
	for _, c := range st.Running() {
		running = append(running, c.ID)
	}
	if !reflect.DeepEqual(running, []string{"a1", "b0"}) {
		t.Errorf("Running() = %v", running)
	}
	// The newest sandbox dying leaves no active sandbox, even with an older ready one.
	rt.Lock()
	rt.Sandboxes["sb-new"].State = criv1.PodSandboxState_SANDBOX_NOTREADY
	rt.Sandboxes["sb-old"].State = criv1.PodSandboxState_SANDBOX_READY
	rt.Unlock()
	if st, err = GetPodStatus(context.Background(), rt, ref); err != nil || st.ActiveSandbox() != nil {
		t.Errorf("ActiveSandbox() = %v, %v; want nil", st.ActiveSandbox(), err)
	}
	if (&PodStatus{}).ActiveSandbox() != nil {
		t.Error("no sandboxes: ActiveSandbox() should be nil")
	}
}

func TestGetPodStatusRaces(t *testing.T) {
	ref := PodRef{UID: "uid-1", Name: "web", Namespace: "shop"}
	notFound := status.Error(codes.NotFound, "no such container")
	cases := []struct {
		name       string
		inject     string
		err        error
		wantErr    bool
		containers int
		sandbox    criv1.PodSandboxState
	}{
		{"container removed between list and status (gRPC NotFound): skipped", "ContainerStatus", notFound, false, 2, criv1.PodSandboxState_SANDBOX_READY},
		// The cri-api fakes report a missing object with a plain error; that is not
		// recognised as NotFound and fails the whole read.
		{"plain not-found error from the fakes: fails", "ContainerStatus", fmt.Errorf("container %q not found", "a1"), true, 0, 0},
		{"sandbox removed between list and status (gRPC NotFound): not ready", "PodSandboxStatus", notFound, false, 3, criv1.PodSandboxState_SANDBOX_NOTREADY},
		{"other status error fails", "PodSandboxStatus", status.Error(codes.Unavailable, "down"), true, 0, 0},
		{"list error fails", "ListContainers", errors.New("boom"), true, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := fakeWithPod(t)
			rt.InjectError(tc.inject, tc.err)
			st, err := GetPodStatus(context.Background(), rt, ref)
			if tc.wantErr {
				if err == nil || st != nil {
					t.Fatalf("GetPodStatus = %v, %v; want an error and no status", st, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Containers) != tc.containers || st.Sandboxes[0].State != tc.sandbox {
				t.Errorf("containers %d, newest sandbox %s; want %d, %s", len(st.Containers), st.Sandboxes[0].State, tc.containers, tc.sandbox)
			}
		})
	}
}

func TestListPodRefs(t *testing.T) {
	rt := fakeWithPod(t)
	// A sandbox without kubelet labels is not a pod of ours.
	if _, err := rt.RunPodSandbox(context.Background(), &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: "f"}}, ""); err != nil {
		t.Fatal(err)
	}
	refs, err := ListPodRefs(context.Background(), rt)
	if err != nil {
		t.Fatal(err)
	}
	want := map[types.UID]PodRef{
		"uid-1":     {UID: "uid-1", Name: "web", Namespace: "shop"},
		"uid-other": {UID: "uid-other", Name: "other", Namespace: "shop"},
	}
	if !reflect.DeepEqual(refs, want) {
		t.Errorf("refs = %v, want %v", refs, want)
	}
}

func TestIsNotFound(t *testing.T) {
	nf := status.Error(codes.NotFound, "gone")
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"gRPC NotFound", nf, true},
		{"gRPC NotFound wrapped", fmt.Errorf("container status %s: %w", "abc", nf), true},
		{"gRPC NotFound wrapped twice", fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", nf)), true},
		{"gRPC other code", fmt.Errorf("x: %w", status.Error(codes.Unavailable, "down")), false},
		{"plain error saying not found", errors.New(`container "abc" not found`), false},
		{"joined", errors.Join(errors.New("a"), nf), true},
	}
	for _, tc := range cases {
		if got := IsNotFound(tc.err); got != tc.want {
			t.Errorf("%s: IsNotFound = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestGRPCTarget(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		err      bool
	}{
		{"unix:///run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock", false},
		{"/run/containerd/containerd.sock", "unix:///run/containerd/containerd.sock", false},
		{"tcp://127.0.0.1:1234", "", true},
		{"", "", true},
	} {
		got, err := grpcTarget(tc.in)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("grpcTarget(%q) = %q, %v", tc.in, got, err)
		}
	}
}

func sorted(evs []PodEvent) []types.UID {
	out := []types.UID{}
	for _, ev := range evs {
		out = append(out, ev.UID)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestPLEGRelist(t *testing.T) {
	ctx := context.Background()
	rt := critest.NewFakeRuntimeService()
	var relists int
	var lastErr error
	p := NewPLEG(rt, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)))
	p.Relisted = func(_ time.Duration, err error) { relists++; lastErr = err }

	podA, podB := testPod(), testPod()
	podB.Name, podB.UID = "db", "uid-2"
	sbCfg := func(pod *v1.Pod) *criv1.PodSandboxConfig {
		return &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
			Labels: SandboxLabels(pod)}
	}
	var sbA, sbB, cA string
	steps := []struct {
		name    string
		act     func() error
		want    []types.UID
		wantErr bool
	}{
		{"empty runtime", func() error { return nil }, []types.UID{}, false},
		{"sandbox A appears", func() (err error) { sbA, err = rt.RunPodSandbox(ctx, sbCfg(podA), ""); return }, []types.UID{"uid-1"}, false},
		{"nothing changed", func() error { return nil }, []types.UID{}, false},
		{"container A created and started", func() (err error) {
			cA, err = rt.CreateContainer(ctx, sbA, &criv1.ContainerConfig{Metadata: &criv1.ContainerMetadata{Name: "c"},
				Image: &criv1.ImageSpec{Image: "busybox:1"}, Labels: ContainerLabels(podA, &podA.Spec.Containers[0])}, nil)
			if err != nil {
				return err
			}
			return rt.StartContainer(ctx, cA)
		}, []types.UID{"uid-1"}, false},
		{"foreign sandbox ignored", func() error {
			_, err := rt.RunPodSandbox(ctx, &criv1.PodSandboxConfig{Metadata: &criv1.PodSandboxMetadata{Name: "foreign"}}, "")
			return err
		}, []types.UID{}, false},
		{"sandbox B appears, A unchanged", func() (err error) { sbB, err = rt.RunPodSandbox(ctx, sbCfg(podB), ""); return }, []types.UID{"uid-2"}, false},
		{"relist error changes nothing", func() error { rt.InjectError("ListContainers", errors.New("down")); return nil }, nil, true},
		{"container A exits", func() error { return rt.StopContainer(ctx, cA, 0) }, []types.UID{"uid-1"}, false},
		{"container A removed, sandbox B stopped", func() error {
			if err := rt.RemoveContainer(ctx, cA); err != nil {
				return err
			}
			return rt.StopPodSandbox(ctx, sbB)
		}, []types.UID{"uid-1", "uid-2"}, false},
		{"sandbox B removed", func() error { return rt.RemovePodSandbox(ctx, sbB) }, []types.UID{"uid-2"}, false},
	}
	// What the event of a step says the relist saw of the pod.
	seen := map[string]func() PodObjects{
		"sandbox A appears": func() PodObjects { return PodObjects{sbA: int32(criv1.PodSandboxState_SANDBOX_READY)} },
		"container A created and started": func() PodObjects {
			return PodObjects{sbA: int32(criv1.PodSandboxState_SANDBOX_READY), cA: 100 + int32(criv1.ContainerState_CONTAINER_RUNNING)}
		},
		"container A exits": func() PodObjects {
			return PodObjects{sbA: int32(criv1.PodSandboxState_SANDBOX_READY), cA: 100 + int32(criv1.ContainerState_CONTAINER_EXITED)}
		},
		"sandbox B removed": func() PodObjects { return PodObjects{} },
	}
	for i, s := range steps {
		if err := s.act(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		got, err := p.Relist(ctx)
		if (err != nil) != s.wantErr || (err != nil) != (lastErr != nil) || relists != i+1 {
			t.Fatalf("%s: err %v, observed err %v, relists %d", s.name, err, lastErr, relists)
		}
		if !s.wantErr && !reflect.DeepEqual(sorted(got), s.want) {
			t.Errorf("%s: changed pods = %v, want %v", s.name, got, s.want)
		}
		if want, ok := seen[s.name]; ok {
			if len(got) != 1 || !reflect.DeepEqual(got[0].Seen, want()) {
				t.Errorf("%s: seen %+v, want %v", s.name, got, want())
			}
		}
	}
}

func TestPLEGRunSendsChanges(t *testing.T) {
	rt := critest.NewFakeRuntimeService()
	pod := testPod()
	if _, err := rt.RunPodSandbox(context.Background(), &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels:   SandboxLabels(pod)}, ""); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan PodEvent)
	done := make(chan struct{})
	go func() {
		NewPLEG(rt, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil))).Run(ctx, out)
		close(done)
	}()
	if ev := <-out; ev.UID != pod.UID || len(ev.Seen) != 1 { // the first relist runs at once
		t.Errorf("got %+v, want pod %q with its sandbox", ev, pod.UID)
	}
	cancel()
	<-done
}

// TestPodStatusObjectsMatchRelist: a worker that read the pod's status
// holds what the next relist reports of it, so that it can tell the
// relist's event brings nothing new.
func TestPodStatusObjectsMatchRelist(t *testing.T) {
	ctx := context.Background()
	rt := critest.NewFakeRuntimeService()
	pod := testPod()
	sb, err := rt.RunPodSandbox(ctx, &criv1.PodSandboxConfig{
		Metadata: &criv1.PodSandboxMetadata{Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID)},
		Labels:   SandboxLabels(pod)}, "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := rt.CreateContainer(ctx, sb, &criv1.ContainerConfig{Metadata: &criv1.ContainerMetadata{Name: "c"},
		Image: &criv1.ImageSpec{Image: "busybox:1"}, Labels: ContainerLabels(pod, &pod.Spec.Containers[0])}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.StartContainer(ctx, c); err != nil {
		t.Fatal(err)
	}
	evs, err := NewPLEG(rt, time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil))).Relist(ctx)
	if err != nil || len(evs) != 1 {
		t.Fatalf("relist: %v, %v", evs, err)
	}
	st, err := GetPodStatus(ctx, rt, PodRef{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Objects(); !reflect.DeepEqual(got, evs[0].Seen) {
		t.Errorf("status objects %v, relist saw %v", got, evs[0].Seen)
	}
}
