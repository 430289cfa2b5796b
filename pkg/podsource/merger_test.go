package podsource

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pod has what the merger reads of a pod: its UID (and a name to show).
func pod(name, uid string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(uid)}}
}

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

	file <- []*v1.Pod{pod("etcd-node-a", "static-etcd")}
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
	web := pod("web", "u1")
	mirror := pod("etcd-node-a", "m1")
	api <- APIPods{Pods: []*v1.Pod{web}, Mirrors: []*v1.Pod{mirror}}
	if c := <-calls; len(c.static) != 1 || len(c.mirrors) != 1 {
		t.Errorf("OnStatic(%v, %v)", c.static, c.mirrors)
	}
	if !m.AllReady() {
		t.Error("not AllReady after both sources reported")
	}
	// While the manager does not read, newer sets replace the pending one.
	api <- APIPods{Pods: []*v1.Pod{web, pod("db", "u2")}}
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

func TestMerge(t *testing.T) {
	etcd, web, db := pod("etcd-node-a", "static-etcd"), pod("web", "u1"), pod("db", "u2")
	tests := []struct {
		name        string
		static, api []*v1.Pod
		want        []string
	}{
		{name: "no pods", want: nil},
		{name: "static pods alone", static: []*v1.Pod{etcd}, want: []string{"etcd-node-a"}},
		{name: "API pods alone", api: []*v1.Pod{web, db}, want: []string{"web", "db"}},
		{name: "static pods first, each source in its order", static: []*v1.Pod{etcd}, api: []*v1.Pod{db, web},
			want: []string{"etcd-node-a", "db", "web"}},
		{name: "a UID of both sources is the file's", static: []*v1.Pod{etcd},
			api: []*v1.Pod{web, pod("etcd-impostor", "static-etcd")}, want: []string{"etcd-node-a", "web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Merge(tt.static, tt.api)
			if !slices.Equal(names(got), tt.want) {
				t.Errorf("Merge = %v, want %v", names(got), tt.want)
			}
		})
	}
}
