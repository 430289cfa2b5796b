package apiclient

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func names(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func recv(t *testing.T, c <-chan []*v1.Pod) []*v1.Pod {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no pod set sent")
		return nil
	}
}

func TestMergerSendsStaticPodsAtOnceThenTheLatestSets(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	file, api := make(chan []*v1.Pod), make(chan APIPods)
	out := make(chan []*v1.Pod) // unbuffered: the test decides when it reads
	type staticCall struct{ static, mirrors []string }
	calls := make(chan staticCall, 10)
	m := &Merger{OnStatic: func(s, mi []*v1.Pod) { calls <- staticCall{names(s), names(mi)} }}
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx, file, api, out) }()

	file <- []*v1.Pod{staticPod("etcd", "c1")}
	// Static pods go out without the API: they must run during an outage.
	if got := names(recv(t, out)); len(got) != 1 || got[0] != "etcd-node-a" {
		t.Fatalf("first set %v, want the static pod alone", got)
	}
	if m.AllReady() {
		t.Error("AllReady before the API source reported")
	}
	select {
	case <-calls:
		t.Fatal("OnStatic called before the API source reported")
	default:
	}
	web := fromAPI(apiPod("web", "u1", v1.PodPending))
	mirror := apiPod("etcd-node-a", "m1", v1.PodPending)
	api <- APIPods{Pods: []*v1.Pod{web}, Mirrors: []*v1.Pod{mirror}}
	if c := <-calls; len(c.static) != 1 || len(c.mirrors) != 1 {
		t.Errorf("OnStatic(%v, %v)", c.static, c.mirrors)
	}
	if !m.AllReady() {
		t.Error("not AllReady after both sources reported")
	}
	// While the manager does not read, newer sets replace the pending one.
	api <- APIPods{Pods: []*v1.Pod{web, fromAPI(apiPod("db", "u2", v1.PodPending))}}
	<-calls
	file <- nil
	<-calls
	got := names(recv(t, out))
	if len(got) != 2 || got[0] != "web" || got[1] != "db" {
		t.Fatalf("merged set = %v, want [web db] (latest of each source)", got)
	}
	select {
	case s := <-out:
		t.Fatalf("stale set %v sent after the latest", names(s))
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestMergerWithoutFileSource(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	api, out := make(chan APIPods, 1), make(chan []*v1.Pod, 1)
	go (&Merger{}).Run(ctx, nil, api, out)
	api <- APIPods{}
	if s := recv(t, out); len(s) != 0 {
		t.Fatalf("set = %v", names(s))
	}
}

func TestAPISourceSnapshots(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mirror := apiPod("etcd-node-a", "m1", v1.PodRunning)
	mirror.Annotations = map[string]string{AnnotationConfigMirror: "h"}
	cs := fake.NewClientset(apiPod("web", "u1", v1.PodPending), mirror)
	src, err := NewAPISource(APISourceConfig{Client: cs, NodeName: "node-a", Logger: discard})
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan APIPods)
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, out) }()
	next := func() APIPods {
		select {
		case s := <-out:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no snapshot")
			return APIPods{}
		}
	}
	s := next()
	if len(s.Pods) != 1 || s.Pods[0].Name != "web" || s.Pods[0].Annotations[AnnotationConfigSource] != SourceAPI {
		t.Fatalf("pods = %v", names(s.Pods))
	}
	if len(s.Mirrors) != 1 || s.Mirrors[0].Name != "etcd-node-a" {
		t.Fatalf("mirrors = %v", names(s.Mirrors))
	}
	for _, a := range cs.Actions() {
		if l, ok := a.(interface {
			GetListRestrictions() k8stesting.ListRestrictions
		}); ok {
			if f := l.GetListRestrictions().Fields.String(); f != "spec.nodeName=node-a" {
				t.Errorf("list field selector = %q", f)
			}
		}
	}
	now := metav1.Now()
	del := apiPod("web", "u1", v1.PodRunning)
	del.DeletionTimestamp = &now
	if _, err := cs.CoreV1().Pods("default").Update(ctx, del, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for s = next(); len(s.Pods) == 1 && s.Pods[0].DeletionTimestamp == nil; s = next() {
	}
	if len(s.Pods) != 1 || s.Pods[0].DeletionTimestamp == nil {
		t.Fatalf("deleted pod not passed on: %v", names(s.Pods))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
