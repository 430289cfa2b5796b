package endpointutil

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
)

func TestFindPort(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: v1.PodSpec{
		InitContainers: []v1.Container{
			{Name: "init", Ports: []v1.ContainerPort{{Name: "init", ContainerPort: 1, Protocol: v1.ProtocolTCP}}},
			{Name: "sidecar", RestartPolicy: &always, Ports: []v1.ContainerPort{{Name: "proxy", ContainerPort: 15001, Protocol: v1.ProtocolTCP}}},
		},
		Containers: []v1.Container{{Name: "c", Ports: []v1.ContainerPort{
			{Name: "dns", ContainerPort: 53, Protocol: v1.ProtocolUDP},
			{Name: "http", ContainerPort: 8080, Protocol: v1.ProtocolTCP},
		}}},
	}}
	tests := []struct {
		target   intstr.IntOrString
		protocol v1.Protocol
		want     int32
		ok       bool
	}{
		{intstr.FromInt32(9090), v1.ProtocolTCP, 9090, true},
		{intstr.FromString("http"), v1.ProtocolTCP, 8080, true},
		{intstr.FromString("dns"), v1.ProtocolUDP, 53, true},
		{intstr.FromString("dns"), v1.ProtocolTCP, 0, false}, // the protocol must match
		{intstr.FromString("proxy"), v1.ProtocolTCP, 15001, true},
		{intstr.FromString("init"), v1.ProtocolTCP, 0, false}, // not a sidecar
	}
	for _, tc := range tests {
		got, err := FindPort(pod, &v1.ServicePort{TargetPort: tc.target, Protocol: tc.protocol})
		if got != tc.want || (err == nil) != tc.ok {
			t.Errorf("FindPort(%s/%s) = %d, %v; want %d, ok %v", tc.target.String(), tc.protocol, got, err, tc.want, tc.ok)
		}
	}
}

func TestShouldPodBeInEndpoints(t *testing.T) {
	base := &v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.1"}}
	noIP, done, deleting := base.DeepCopy(), base.DeepCopy(), base.DeepCopy()
	noIP.Status.PodIP = ""
	done.Status.Phase = v1.PodFailed
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name                string
		pod                 *v1.Pod
		terminating, wanted bool
	}{
		{"running", base, false, true},
		{"no IP", noIP, true, false},
		{"failed", done, true, false},
		{"deleting", deleting, false, false},
		{"deleting, kept", deleting, true, true},
	} {
		if got := ShouldPodBeInEndpoints(tc.pod, tc.terminating); got != tc.wanted {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.wanted)
		}
	}
}

func TestServicesForPodChange(t *testing.T) {
	svc := func(name string, sel map[string]string) *v1.Service {
		return &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}, Spec: v1.ServiceSpec{Selector: sel}}
	}
	client := fake.NewClientset(svc("web", map[string]string{"app": "web"}), svc("all", map[string]string{}),
		svc("manual", nil), svc("db", map[string]string{"app": "db"}))
	f := informers.NewSharedInformerFactory(client, 0)
	lister := f.Core().V1().Services().Lister()
	f.Start(t.Context().Done())
	f.WaitForCacheSync(t.Context().Done())

	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", ResourceVersion: "1", Labels: map[string]string{"app": "web"}}}
	relabelled := pod.DeepCopy()
	relabelled.ResourceVersion, relabelled.Labels = "2", map[string]string{"app": "db"}
	ready := pod.DeepCopy()
	ready.ResourceVersion = "2"
	ready.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	annotated := pod.DeepCopy()
	annotated.ResourceVersion, annotated.Annotations = "2", map[string]string{"a": "b"}
	both := relabelled.DeepCopy()
	both.Status.PodIPs = []v1.PodIP{{IP: "10.0.0.1"}}

	for _, tc := range []struct {
		name     string
		old, cur any
		want     []string
	}{
		{"add", nil, pod, []string{"ns/all", "ns/web"}},
		{"delete", pod, nil, []string{"ns/all", "ns/web"}},
		{"resync", pod, pod, nil},
		{"annotation only", pod, annotated, nil},
		{"readiness", pod, ready, []string{"ns/all", "ns/web"}},
		{"labels: gained and lost only", pod, relabelled, []string{"ns/db", "ns/web"}},
		{"labels and IPs: all", pod, both, []string{"ns/all", "ns/db", "ns/web"}},
	} {
		got, err := ServicesForPodChange(lister, tc.old, tc.cur)
		if err != nil || !slices.Equal(sets.List(got), tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, sets.List(got), err, tc.want)
		}
	}
}

func TestTriggerTime(t *testing.T) {
	at := func(m int) metav1.Time { return metav1.NewTime(time.Date(2025, 6, 1, 12, m, 0, 0, time.UTC)) }
	svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", CreationTimestamp: at(0)}}
	pod := func(name string, readyAt int) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1.PodStatus{Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: at(readyAt)}}}}
	}
	tr := NewTriggerTimeTracker()
	steps := []struct {
		pods []*v1.Pod
		want time.Time
	}{
		{[]*v1.Pod{pod("a", 5)}, at(0).Time},                                              // new service: its creation
		{[]*v1.Pod{pod("a", 5)}, time.Time{}},                                             // nothing new
		{[]*v1.Pod{pod("a", 7), pod("b", 6)}, at(6).Time},                                 // the earliest new change
		{[]*v1.Pod{pod("a", 7), pod("b", 6)}, time.Time{}},                                // seen
		{[]*v1.Pod{pod("a", 7), {ObjectMeta: metav1.ObjectMeta{Name: "c"}}}, time.Time{}}, // no Ready condition yet
	}
	for i, s := range steps {
		if got := tr.Compute(svc, s.pods); !got.Equal(s.want) {
			t.Errorf("step %d: %v, want %v", i, got, s.want)
		}
	}
	tr.Forget("ns", "web")
	if got := tr.Compute(svc, nil); !got.Equal(at(0).Time) {
		t.Errorf("after Forget: %v, want the creation again", got)
	}
}
