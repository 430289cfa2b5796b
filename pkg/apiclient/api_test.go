package apiclient

import (
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Each client has a rate limiter of its own: the status updates' budget
// is not the reads', events have theirs, heartbeats none.
func TestNewClientsLimits(t *testing.T) {
	rc := ClientConfig(&rest.Config{Host: "https://127.0.0.1:6443", QPS: 7, Burst: 9}, "nodeagent/test", Limits{QPS: 50, Burst: 100, EventQPS: 20, EventBurst: 30})
	if rc.QPS != 50 || rc.Burst != 100 || rc.UserAgent != "nodeagent/test" {
		t.Errorf("client config QPS %v burst %d agent %q", rc.QPS, rc.Burst, rc.UserAgent)
	}
	c, err := NewClients(rc, Limits{QPS: 50, Burst: 100, EventQPS: 20, EventBurst: 30, HeartbeatTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	qps := func(cs kubernetes.Interface) float32 {
		l := cs.CoreV1().RESTClient().GetRateLimiter()
		if l == nil {
			return -1
		}
		return l.QPS()
	}
	for name, tc := range map[string]struct {
		cs   kubernetes.Interface
		want float32
	}{"main": {c.Main, 50}, "status": {c.Status, 50}, "events": {c.Events, 20}, "heartbeat": {c.Heartbeat, -1}} {
		if got := qps(tc.cs); got != tc.want {
			t.Errorf("%s client: QPS %v, want %v", name, got, tc.want)
		}
	}
	if got := c.Heartbeat.CoreV1().RESTClient().(*rest.RESTClient).Client.Timeout; got != 10*time.Second {
		t.Errorf("heartbeat timeout %s, want nodeStatusUpdateFrequency", got)
	}
	if c.Main.CoreV1().RESTClient().GetRateLimiter() == c.Status.CoreV1().RESTClient().GetRateLimiter() {
		t.Error("status updates share the main client's rate limiter")
	}
}
