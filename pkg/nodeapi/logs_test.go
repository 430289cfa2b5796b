package nodeapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

var logT0 = time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)

func criLine(sec int, stream, tag, content string) string {
	return fmt.Sprintf("%s %s %s %s\n", logT0.Add(time.Duration(sec)*time.Second).Format(time.RFC3339Nano), stream, tag, content)
}

// logFixture is a pod whose container "app" restarted once: c1 (0.log)
// exited, c2 (1.log) runs; "init" succeeded; "pending" waits.
func logFixture(t *testing.T) (*Server, *fakeRuntime, string) {
	t.Helper()
	dir := runtime.PodLogsDir(t.TempDir(), "shop", "web", "uid-1")
	write := func(rel string, lines ...string) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	prev := write(runtime.ContainerLogPath("app", 0), criLine(0, "stdout", "F", "first run"), criLine(1, "stderr", "F", "crashed"))
	cur := write(runtime.ContainerLogPath("app", 1),
		criLine(10, "stdout", "F", "second run"),
		criLine(11, "stdout", "P", "a long "),
		criLine(12, "stdout", "F", "line"),
		criLine(13, "stderr", "F", "warning"))
	initLog := write(runtime.ContainerLogPath("init", 0), criLine(0, "stdout", "F", "initialised"))
	rt := &fakeRuntime{statuses: map[string]*criv1.ContainerStatus{
		"c1": {Id: "c1", State: criv1.ContainerState_CONTAINER_EXITED, LogPath: prev},
		"c2": {Id: "c2", State: criv1.ContainerState_CONTAINER_RUNNING, LogPath: cur},
		"i1": {Id: "i1", State: criv1.ContainerState_CONTAINER_EXITED, LogPath: initLog},
	}}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "uid-1"}}
	pod.Spec.InitContainers = []v1.Container{{Name: "init"}}
	pod.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "pending"}, {Name: "fresh"}}
	pod.Status.InitContainerStatuses = []v1.ContainerStatus{{Name: "init", ContainerID: "containerd://i1",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://i1"}}}}
	pod.Status.ContainerStatuses = []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://c2", RestartCount: 1,
			State:                v1.ContainerState{Running: &v1.ContainerStateRunning{}},
			LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ContainerID: "containerd://c1"}}},
		{Name: "pending", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ImagePullBackOff"}}},
		{Name: "fresh", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}},
	}
	return openServer(t, podList{pod}, rt), rt, cur
}

func TestContainerLogs(t *testing.T) {
	s, _, _ := logFixture(t)
	ts := func(sec int) string {
		return logT0.Add(time.Duration(sec)*time.Second).Format("2006-01-02T15:04:05.000000000Z07:00") + " "
	}
	tests := []struct {
		name, query string
		code        int
		want        string
	}{
		{"current", "", 200, "second run\na long line\nwarning\n"},
		{"previous", "?previous=true", 200, "first run\ncrashed\n"},
		{"tailLines", "?tailLines=2", 200, "a long line\nwarning\n"},
		{"old tail parameter", "?tail=1", 200, "warning\n"},
		{"tail all", "?tail=all", 200, "second run\na long line\nwarning\n"},
		{"timestamps", "?timestamps=1&tailLines=1", 200, ts(13) + "warning\n"},
		{"sinceTime", "?sinceTime=" + logT0.Add(11*time.Second).Format(time.RFC3339), 200, "a long line\nwarning\n"},
		{"sinceSeconds far back", "?sinceSeconds=999999999", 200, "second run\na long line\nwarning\n"},
		{"limitBytes", "?limitBytes=13", 200, "second run\na "},
		{"follow of an exited container ends", "?previous=true&follow=true", 200, "first run\ncrashed\n"},
		{"init container", "", 200, "initialised\n"},
		{"bad number", "?tailLines=many", 400, `{"message": "Unable to decode query."}`},
		{"invalid", "?limitBytes=0", 422, `{"message": "Invalid request."}`},
		{"two sinces", "?sinceSeconds=1&sinceTime=2024-05-01T10:00:00Z", 422, `{"message": "Invalid request."}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			container := "app"
			if tt.name == "init container" {
				container = "init"
			}
			rec := get(t, s.Handler(), "/containerLogs/shop/web/"+container+tt.query)
			got := rec.Body.String()
			if rec.Code != http.StatusOK {
				got = strings.TrimSuffix(got, "\n") // http.Error's line feed
			}
			if rec.Code != tt.code || got != tt.want {
				t.Errorf("%d %q, want %d %q", rec.Code, rec.Body.String(), tt.code, tt.want)
			}
		})
	}
}

func TestContainerLogsErrors(t *testing.T) {
	s, _, _ := logFixture(t)
	tests := []struct {
		path string
		code int
		want string
	}{
		{"/containerLogs/shop/nope/app", 404, `pod "nope" does not exist`},
		{"/containerLogs/shop/web/nope", 404, `container "nope" not found in pod "web"`},
		{"/containerLogs/shop/web/pending", 400, `container "pending" in pod "web" is waiting to start: trying and failing to pull image`},
		{"/containerLogs/shop/web/fresh", 400, `container "fresh" in pod "web" is waiting to start: ContainerCreating`},
		{"/containerLogs/shop/web/init?previous=1", 400, `previous terminated container "init" in pod "web" not found`},
	}
	for _, tt := range tests {
		rec := get(t, s.Handler(), tt.path)
		if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.want) {
			t.Errorf("%s: %d %q, want %d %q", tt.path, rec.Code, rec.Body.String(), tt.code, tt.want)
		}
	}
}

func TestContainerLogsFollow(t *testing.T) {
	s, rt, cur := logFixture(t)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/containerLogs/shop/web/app?follow=true&tailLines=1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	readLine := func(want string) {
		t.Helper()
		buf := make([]byte, len(want))
		if _, err := ioReadFull(resp, buf); err != nil || string(buf) != want {
			t.Fatalf("read %q (%v), want %q", buf, err, want)
		}
	}
	readLine("warning\n")
	f, err := os.OpenFile(cur, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(criLine(20, "stdout", "F", "appended"))
	f.Close()
	readLine("appended\n")
	rt.setState("c2", criv1.ContainerState_CONTAINER_EXITED)
	done := make(chan error, 1)
	go func() {
		_, err := ioReadFull(resp, make([]byte, 1))
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Error("more output after the container stopped")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follow did not end when the container stopped")
	}
}
