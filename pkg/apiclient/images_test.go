package apiclient

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNodeImages(t *testing.T) {
	list := []*criv1.Image{
		{Id: "s", Size: 3, RepoTags: []string{"small:1"}},
		{Id: "l", Size: 9, RepoTags: []string{"large:1", "large:latest"}, RepoDigests: []string{"large@sha256:aa"}},
		{Id: "m", Size: 5, RepoTags: []string{"a", "b", "c", "d"}, RepoDigests: []string{"m@1", "m@2"}},
	}
	all := []v1.ContainerImage{
		{Names: []string{"large@sha256:aa", "large:1", "large:latest"}, SizeBytes: 9},
		{Names: []string{"m@1", "m@2", "a", "b", "c"}, SizeBytes: 5}, // at most 5 names, digests first
		{Names: []string{"small:1"}, SizeBytes: 3},
	}
	for _, tc := range []struct {
		max  int32
		want []v1.ContainerImage
	}{{-1, all}, {2, all[:2]}, {50, all}, {0, nil}} {
		t.Run(fmt.Sprint(tc.max), func(t *testing.T) {
			if got := NodeImages(list, tc.max); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("NodeImages(%d) = %v, want %v", tc.max, got, tc.want)
			}
		})
	}
	if list[0].Id != "s" {
		t.Error("NodeImages sorted its argument")
	}
}

type fakeImages struct {
	list []*criv1.Image
	err  error
}

func (f *fakeImages) ListImages(context.Context, *criv1.ImageFilter) ([]*criv1.Image, error) {
	return f.list, f.err
}

func TestNodeStatusImages(t *testing.T) {
	rt := &fakeRuntime{}
	rt.set(true, true, nil)
	n, cs := newTestNode(t, rt, newClock())
	imgs := &fakeImages{list: []*criv1.Image{{Id: "x", Size: 7, RepoTags: []string{"localhost/x:1"}}}}
	n.cfg.Images, n.cfg.MaxImages = imgs, 50
	if err := n.register(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []v1.ContainerImage{{Names: []string{"localhost/x:1"}, SizeBytes: 7}}
	if got := getNode(t, cs).Status.Images; !reflect.DeepEqual(got, want) {
		t.Errorf("status.images = %v, want %v", got, want)
	}
	imgs.err = errors.New("runtime down")
	if err := n.sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := getNode(t, cs).Status.Images; got != nil {
		t.Errorf("status.images after a failed list = %v, want none (as the kubelet's)", got)
	}
}
