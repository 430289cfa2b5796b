package registry

import (
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func rows(t *testing.T, r *Resource, wide bool, objs ...runtime.Object) ([]string, [][]interface{}) {
	t.Helper()
	cols, cells := r.Table(objs, wide)
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	for i, row := range cells {
		if len(row) != len(cols) {
			t.Fatalf("%s row %d has %d cells for %d columns", r.Plural, i, len(row), len(cols))
		}
	}
	return names, cells
}

func TestPodTable(t *testing.T) {
	now, reg := fixedNow(t)
	pods := reg.Get("", "v1", "pods")
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	created := metav1.ObjectMeta{Name: "p", Namespace: "default", CreationTimestamp: ago(2 * time.Hour)}
	spec := v1.PodSpec{NodeName: "n1", Containers: []v1.Container{{Name: "a"}, {Name: "b"}}}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	ready := v1.PodCondition{Type: v1.PodReady, Status: v1.ConditionTrue}

	runningPod := &v1.Pod{ObjectMeta: created, Spec: spec, Status: v1.PodStatus{
		Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "10.1.0.5"}}, Conditions: []v1.PodCondition{ready},
		ContainerStatuses: []v1.ContainerStatus{
			{Name: "a", Ready: true, State: running},
			{Name: "b", Ready: true, State: running, RestartCount: 3,
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(5 * time.Minute)}}},
		},
	}}
	crashing := runningPod.DeepCopy()
	crashing.Status.ContainerStatuses[1].Ready = false
	crashing.Status.ContainerStatuses[1].State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}

	completed := &v1.Pod{ObjectMeta: created, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{
		Phase: v1.PodSucceeded,
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{
			Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}},
	}}

	initPod := &v1.Pod{ObjectMeta: created, Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "i1"}, {Name: "i2"}},
		Containers:     []v1.Container{{Name: "a"}},
	}, Status: v1.PodStatus{
		Phase: v1.PodPending,
		InitContainerStatuses: []v1.ContainerStatus{
			{Name: "i1", State: running},
			{Name: "i2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}},
		},
		ContainerStatuses: []v1.ContainerStatus{{Name: "a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "PodInitializing"}}}},
	}}

	terminating := runningPod.DeepCopy()
	terminating.DeletionTimestamp = ptrTo(ago(time.Second))

	names, cells := rows(t, pods, true, runningPod, crashing, completed, initPod, terminating)
	wantCols := []string{"Name", "Ready", "Status", "Restarts", "Age", "IP", "Node", "Nominated Node", "Readiness Gates"}
	if !reflect.DeepEqual(names, wantCols) {
		t.Errorf("columns = %v", names)
	}
	want := [][]interface{}{
		{"p", "2/2", "Running", "3 (5m ago)", "120m", "10.1.0.5", "n1", "<none>", "<none>"},
		{"p", "1/2", "CrashLoopBackOff", "3 (5m ago)", "120m", "10.1.0.5", "n1", "<none>", "<none>"},
		{"p", "0/1", "Completed", "0", "120m", "<none>", "<none>", "<none>", "<none>"},
		{"p", "0/1", "Init:0/2", "0", "120m", "<none>", "<none>", "<none>", "<none>"},
		{"p", "2/2", "Terminating", "3 (5m ago)", "120m", "10.1.0.5", "n1", "<none>", "<none>"},
	}
	for i := range want {
		if !reflect.DeepEqual(cells[i], want[i]) {
			t.Errorf("row %d = %v, want %v", i, cells[i], want[i])
		}
	}

	names, cells = rows(t, pods, false, runningPod)
	if !reflect.DeepEqual(names, wantCols[:5]) || !reflect.DeepEqual(cells[0], want[0][:5]) {
		t.Errorf("narrow table: %v %v", names, cells)
	}
}

func TestNodeTable(t *testing.T) {
	now, reg := fixedNow(t)
	nodes := reg.Get("", "v1", "nodes")
	node := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(now.Add(-3 * 24 * time.Hour)),
			Labels: map[string]string{"node-role.kubernetes.io/control-plane": "", "kubernetes.io/hostname": "n1"}},
		Spec: v1.NodeSpec{Unschedulable: true},
		Status: v1.NodeStatus{
			Conditions: []v1.NodeCondition{{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse}, {Type: v1.NodeReady, Status: v1.ConditionTrue}},
			Addresses:  []v1.NodeAddress{{Type: v1.NodeHostName, Address: "n1"}, {Type: v1.NodeInternalIP, Address: "192.168.1.10"}},
			NodeInfo:   v1.NodeSystemInfo{KubeletVersion: "v1.34.0", OSImage: "Debian GNU/Linux 13", KernelVersion: "6.12.0", ContainerRuntimeVersion: "containerd://2.1.0"},
		},
	}
	names, cells := rows(t, nodes, true, node)
	wantCols := []string{"Name", "Status", "Roles", "Age", "Version", "Internal-IP", "External-IP", "OS-Image", "Kernel-Version", "Container-Runtime"}
	want := []interface{}{"n1", "Ready,SchedulingDisabled", "control-plane", "3d", "v1.34.0", "192.168.1.10", "<none>", "Debian GNU/Linux 13", "6.12.0", "containerd://2.1.0"}
	if !reflect.DeepEqual(names, wantCols) || !reflect.DeepEqual(cells[0], want) {
		t.Errorf("node table: %v\n%v", names, cells[0])
	}
}

func TestWorkloadAndServiceTables(t *testing.T) {
	now, reg := fixedNow(t)
	deployments := reg.Get("apps", "v1", "deployments")
	services := reg.Get("", "v1", "services")
	coreEvents := reg.Get("", "v1", "events")
	eventsV1 := reg.Get("events.k8s.io", "v1", "events")
	d := newDeployment()
	d.CreationTimestamp = metav1.NewTime(now.Add(-90 * time.Second))
	deployments.Default(d)
	*d.Spec.Replicas = 3
	d.Status = appsv1.DeploymentStatus{Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3, AvailableReplicas: 2}
	names, cells := rows(t, deployments, true, d)
	wantCols := []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"}
	want := []interface{}{"web", "2/3", int64(3), int64(2), "90s", "web", "nginx:1.27", "app=web"}
	if !reflect.DeepEqual(names, wantCols) || !reflect.DeepEqual(cells[0], want) {
		t.Errorf("deployment table: %v\n%v", names, cells[0])
	}

	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, ClusterIPs: []string{"10.96.0.10"}, Selector: map[string]string{"app": "web"},
			Ports: []v1.ServicePort{{Port: 80, NodePort: 30080, Protocol: v1.ProtocolTCP}, {Port: 53, Protocol: v1.ProtocolUDP}}}}
	_, cells = rows(t, services, true, svc)
	if want := []interface{}{"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "60m", "app=web"}; !reflect.DeepEqual(cells[0], want) {
		t.Errorf("service row = %v", cells[0])
	}

	ev := &v1.Event{ObjectMeta: metav1.ObjectMeta{Name: "p.1"}, Type: "Warning", Reason: "BackOff", Message: " Back-off restarting ",
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{a}"}, Count: 4,
		Source:         v1.EventSource{Component: "kubelet", Host: "n1"},
		FirstTimestamp: metav1.NewTime(now.Add(-10 * time.Minute)), LastTimestamp: metav1.NewTime(now.Add(-30 * time.Second))}
	names, cells = rows(t, coreEvents, false, ev)
	if !reflect.DeepEqual(names, []string{"Last Seen", "Type", "Reason", "Object", "Message"}) ||
		!reflect.DeepEqual(cells[0], []interface{}{"30s", "Warning", "BackOff", "pod/p", "Back-off restarting"}) {
		t.Errorf("event table: %v %v", names, cells[0])
	}
	_, cells = rows(t, eventsV1, true, EventFromCore(ev))
	if want := []interface{}{"30s", "Warning", "BackOff", "pod/p", "spec.containers{a}", "kubelet, n1", "Back-off restarting", "10m", int64(4), "p.1"}; !reflect.DeepEqual(cells[0], want) {
		t.Errorf("events.k8s.io event row = %v", cells[0])
	}
}
