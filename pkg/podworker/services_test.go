package podworker

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

type fakeServices struct {
	synced bool
	list   []*v1.Service
	err    error
}

func (f *fakeServices) ListServices() ([]*v1.Service, error) { return f.list, f.err }
func (f *fakeServices) HasSynced() bool                      { return f.synced }

func TestPodServices(t *testing.T) {
	apiPod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	static := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s",
		Annotations: map[string]string{podutil.ConfigSourceAnnotation: podutil.SourceFile}}}
	k := []*v1.Service{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"}}}
	listErr := errors.New("boom")
	for _, tc := range []struct {
		name    string
		l       ServiceLister
		pod     *v1.Pod
		want    int
		wantErr error
	}{
		{name: "standalone: none", l: nil, pod: static},
		{name: "synced", l: &fakeServices{synced: true, list: k}, pod: apiPod, want: 1},
		{name: "an API pod waits for the first list", l: &fakeServices{list: k}, pod: apiPod, wantErr: errServicesNotSynced},
		{name: "a static pod does not wait", l: &fakeServices{list: k}, pod: static, want: 1},
		{name: "list error", l: &fakeServices{synced: true, err: listErr}, pod: apiPod, wantErr: listErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podServices(tc.l, tc.pod)
			if !errors.Is(err, tc.wantErr) || len(got) != tc.want {
				t.Errorf("podServices = %d services, %v; want %d, %v", len(got), err, tc.want, tc.wantErr)
			}
		})
	}
}
