package network

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// podCIDRRange is the whole cluster CIDR of the test's own control plane:
// one node's block, which a placeholder Node holds until the test lets go.
const podCIDRRange = "10.245.0.0/24"

// A static pod the agent starts before its node's pod CIDR is known waits
// for kubenet's network (the kubelet's NetworkReady wait, with its
// NetworkNotReady event) and then gets an address in the pod CIDR, even
// though the runtime is ready meanwhile on another CNI network (as make
// run's containerd is on its fallback bridge); a hostNetwork static pod
// runs at once. The pod CIDR is held back deterministically: the control
// plane's cluster CIDR has room for one node, taken by a placeholder Node
// until the test deletes it.
func TestStaticPodWaitsForThePodCIDR(t *testing.T) {
	ctx := context.Background()
	n := nodes[0]
	cp2, err := framework.StartControlPlane(filepath.Join(t.TempDir(), "server"), framework.NodeGatewayIP, func(c *server.Config) {
		c.BindAddress, c.ExtraSANs = "0.0.0.0", []string{framework.NodeGatewayIP}
		c.ClusterCIDR, c.NodeCIDRMaskSize = podCIDRRange, 24
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp2.Stop(); err != nil {
			t.Error(err)
		}
	})
	placeholder := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cidr-placeholder"}}
	if _, err := cp2.Admin.CoreV1().Nodes().Create(ctx, placeholder, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, "the placeholder node to take the only pod CIDR", func() (bool, error) {
		got, err := cp2.Admin.CoreV1().Nodes().Get(ctx, placeholder.Name, metav1.GetOptions{})
		return err == nil && got.Spec.PodCIDR == podCIDRRange, err
	})

	// The runtime's own network, which it reports ready for: the first
	// configuration in its directory until kubenet's 05-kubenet sorts
	// before it.
	fallback := filepath.Join(n.inst.CNIConfDir(), "10-fallback.conflist")
	conf := fmt.Sprintf(`{"cniVersion": "1.0.0", "name": "fallback", "plugins": [{"type": "bridge", "bridge": "natfb0", "isGateway": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.99.0.0/24"}]], "dataDir": %q}}]}`, t.TempDir())
	if err := os.WriteFile(fallback, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(fallback) }) // after the agent has gone (cleanups run last first)

	var a *framework.Agent
	startAgentOn(t, n, cp2, func(ag *framework.Agent) {
		a = ag
		for name, extra := range map[string]string{"web": "", "host": "  hostNetwork: true\n"} {
			m := fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec:\n%s  containers:\n  - {name: c, image: %s, command: [sleep, \"3600\"]}\n",
				name, extra, framework.BusyboxImage)
			if err := ag.WriteManifest(name+".yaml", m); err != nil {
				t.Fatal(err)
			}
		}
	}, "--cluster-cidr", podCIDRRange)
	t.Cleanup(func() { // before the agent stops: it removes the pods
		for _, name := range []string{"web", "host"} {
			_ = a.RemoveManifest(name + ".yaml")
			if err := a.WaitGone(name, apiTimeout); err != nil {
				t.Error(err)
			}
		}
	})

	running := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }
	if _, err := a.WaitPod("host", apiTimeout, running); err != nil {
		t.Fatal(err)
	}
	const why = "network is not ready: container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:" +
		"nodeagent: network plugin is not ready: kubenet does not have netConfig. This is most likely due to lack of PodCIDR"
	waitFor(t, apiTimeout, "the NetworkNotReady event", func() (bool, error) {
		evs, err := cp2.Admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("reason", "NetworkNotReady").String()})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Name == "web-"+n.name && e.Type == v1.EventTypeWarning && e.Message == why {
				return true, nil
			}
		}
		return false, fmt.Errorf("events %+v", evs.Items)
	})
	// The node says so too (the kubelet's ReadyCondition with its
	// networkErrors), and the scheduler keeps API pods off it meanwhile.
	nodeReady := func(want v1.ConditionStatus, msg string) func() (bool, error) {
		return func() (bool, error) {
			node, err := cp2.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range node.Status.Conditions {
				if c.Type == v1.NodeReady {
					if c.Status == want && c.Message == msg && (want == v1.ConditionTrue || c.Reason == "KubeletNotReady") {
						return true, nil
					}
					return false, fmt.Errorf("Ready %+v", c)
				}
			}
			return false, fmt.Errorf("no Ready condition in %+v", node.Status.Conditions)
		}
	}
	waitFor(t, apiTimeout, "the node NotReady for its network", nodeReady(v1.ConditionFalse, strings.TrimPrefix(why, "network is not ready: ")))
	web, err := a.Pod("web")
	if err != nil || web == nil || web.Status.Phase != v1.PodPending || web.Status.PodIP != "" {
		t.Fatalf("the pod that needs the network, while its node has no pod CIDR: %+v, %v", web, err)
	}
	sbs, err := n.cri.ListPodSandbox(ctx, nil)
	if err != nil || len(sbs) != 1 || !strings.HasPrefix(sbs[0].GetMetadata().GetName(), "host-") {
		t.Fatalf("sandboxes %v (%v), want the hostNetwork pod's alone", sbs, err)
	}

	if err := cp2.Admin.CoreV1().Nodes().Delete(ctx, placeholder.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if web, err = a.WaitPod("web", apiTimeout, running); err != nil {
		t.Fatal(err)
	}
	waitFor(t, apiTimeout, "the node Ready", nodeReady(v1.ConditionTrue, "kubelet is posting ready status"))
	ip, err := netip.ParseAddr(web.Status.PodIP)
	if err != nil || !netip.MustParsePrefix(podCIDRRange).Contains(ip) {
		t.Errorf("pod IP %q (%v), want one in the node's pod CIDR %s", web.Status.PodIP, err, podCIDRRange)
	}
}
