package agent

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/network"
)

type fakeStatus struct {
	resp    *criv1.StatusResponse
	err     error
	verbose bool
}

func (f *fakeStatus) Status(_ context.Context, verbose bool) (*criv1.StatusResponse, error) {
	f.verbose = verbose
	return f.resp, f.err
}

type fakeKubenet struct {
	ok  bool
	msg string
}

func (f *fakeKubenet) Configured() (bool, string) { return f.ok, f.msg }

func netStatus(ready bool, cniconfig string) *criv1.StatusResponse {
	r := &criv1.StatusResponse{Status: &criv1.RuntimeStatus{Conditions: []*criv1.RuntimeCondition{
		{Type: criv1.RuntimeReady, Status: true},
		{Type: criv1.NetworkReady, Status: ready, Reason: "NetworkPluginNotReady", Message: "Network plugin returns error: cni plugin not initialized"},
	}}}
	if cniconfig != "" {
		r.Info = map[string]string{"cniconfig": cniconfig}
	}
	return r
}

const (
	loadedKubenet  = `{"PluginConfDir":"/etc/cni/net.d","Networks":[{"Config":{"Name":"cni-loopback"},"IFName":"lo"},{"Config":{"Name":"kubenet","CNIVersion":"1.0.0"},"IFName":"eth0"}]}`
	loadedFallback = `{"PluginConfDir":"/etc/cni/net.d","Networks":[{"Config":{"Name":"cni-loopback"},"IFName":"lo"},{"Config":{"Name":"nodeagent"},"IFName":"eth0"}]}`
)

func TestNetworkGate(t *testing.T) {
	const prefix = "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:"
	cases := []struct {
		name    string
		kubenet *fakeKubenet
		resp    *criv1.StatusResponse
		want    string // "" for ready
	}{
		{"runtime ready, no kubenet", nil, netStatus(true, ""), ""},
		{"runtime network not ready", nil, netStatus(false, ""), prefix + "Network plugin returns error: cni plugin not initialized"},
		{"no NetworkReady condition", nil, &criv1.StatusResponse{Status: &criv1.RuntimeStatus{}},
			"container runtime network not ready: NetworkReady condition not reported"},
		{"kubenet without a pod CIDR, the runtime ready on another network", &fakeKubenet{msg: network.MessageWaitingForPodCIDR}, netStatus(true, loadedFallback),
			prefix + "nodeagent: network plugin is not ready: kubenet does not have netConfig. This is most likely due to lack of PodCIDR"},
		{"kubenet failed to write", &fakeKubenet{msg: "validate plugins: bridge missing"}, netStatus(true, loadedFallback),
			prefix + "nodeagent: network plugin is not ready: validate plugins: bridge missing"},
		{"kubenet written, the runtime still on its fallback network", &fakeKubenet{ok: true}, netStatus(true, loadedFallback),
			prefix + "nodeagent: network plugin is not ready: the container runtime has not loaded kubenet's CNI configuration yet"},
		{"kubenet written and loaded", &fakeKubenet{ok: true}, netStatus(true, loadedKubenet), ""},
		{"kubenet written, a runtime that does not list its networks", &fakeKubenet{ok: true}, netStatus(true, ""), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := &fakeStatus{resp: tc.resp}
			g := newNetworkGate(rt, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if tc.kubenet != nil {
				g.kubenet = tc.kubenet
			}
			if g.Err() != errNetworkUnknown {
				t.Fatalf("before the first check: %v", g.Err())
			}
			changes := 0
			g.onChange = func() { changes++ }
			g.refresh(context.Background())
			err := g.Err()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
				t.Fatalf("Err() = %v\nwant %q", err, tc.want)
			}
			if changes != 1 {
				t.Errorf("onChange called %d times, want 1", changes)
			}
			g.refresh(context.Background())
			if changes != 1 {
				t.Errorf("onChange called again without a change")
			}
		})
	}
}

func TestNetworkGateKeepsItsAnswerWhenTheRuntimeIsDown(t *testing.T) {
	rt := &fakeStatus{resp: netStatus(true, "")}
	g := newNetworkGate(rt, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	g.refresh(context.Background())
	rt.resp, rt.err = nil, errors.New("connection refused")
	g.refresh(context.Background())
	if err := g.Err(); err != nil {
		t.Errorf("Err() = %v after a failed status call, want the last answer (ready)", err)
	}
	if rt.verbose {
		t.Error("without kubenet the status call need not be verbose")
	}
}
