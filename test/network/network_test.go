package network

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// podOn is a busybox pod pinned to a node, running script.
func podOn(name, nodeName, script string, extra string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, labels: {app: %s}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
%s`, name, name, nodeName, framework.BusyboxImage, "trap 'exit 0' TERM; "+script+" & wait", extra)
}

// webScript serves "hello from <name>" on port 8080.
func webScript(name string) string {
	return fmt.Sprintf("mkdir /www; echo hello from %s > /www/index.html; httpd -f -p 8080 -h /www", name)
}

func condition(n *v1.Node, t v1.NodeConditionType) v1.NodeCondition {
	for _, c := range n.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return v1.NodeCondition{}
}

func waitPodIP(t *testing.T, name string) string {
	t.Helper()
	var ip string
	waitFor(t, apiTimeout, "pod "+name+" running with an IP", func() (bool, error) {
		p, err := cp.Admin.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		return p.Status.Phase == v1.PodRunning && ip != "", fmt.Errorf("phase %s", p.Status.Phase)
	})
	return ip
}

// httpGet fetches http://addr/ through dial and returns the body.
func httpGet(dial func(ctx context.Context, network, addr string) (net.Conn, error), addr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := dial(ctx, "tcp", addr)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, "GET / HTTP/1.0\r\n\r\n"); err != nil {
		return "", err
	}
	b, err := io.ReadAll(conn)
	return string(b), err
}

// TestMultiNodeNetwork: two nodes in their own network namespaces get pod
// CIDRs from the control plane, write their CNI configuration and route to
// each other's pods; pods reach pods on the other node and hostPorts
// answer on the node's address; a node that leaves takes its route along.
func TestMultiNodeNetwork(t *testing.T) {
	for _, n := range nodes {
		startAgent(t, n)
	}
	ctx := context.Background()
	cidr := map[string]string{}
	t.Run("nodes ready with their pod network", func(t *testing.T) {
		for _, n := range nodes {
			waitFor(t, apiTimeout, n.name+" Ready with NetworkUnavailable False", func() (bool, error) {
				node, err := cp.Admin.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				cidr[n.name] = node.Spec.PodCIDR
				ready, netc := condition(node, v1.NodeReady), condition(node, v1.NodeNetworkUnavailable)
				return ready.Status == v1.ConditionTrue && netc.Status == v1.ConditionFalse && netc.Reason == "RouteCreated",
					fmt.Errorf("Ready %s (%s), NetworkUnavailable %s %s", ready.Status, ready.Message, netc.Status, netc.Message)
			})
			conf, err := os.ReadFile(filepath.Join(n.inst.CNIConfDir(), "05-kubenet.conflist"))
			if err != nil || !strings.Contains(string(conf), cidr[n.name]) || !strings.Contains(string(conf), `"cbr0"`) {
				t.Errorf("%s CNI config: %v\n%s", n.name, err, conf)
			}
		}
	})
	t.Run("routes to the other node's pod CIDR", func(t *testing.T) {
		for i, n := range nodes {
			other := nodes[1-i]
			want := fmt.Sprintf("%s via %s", cidr[other.name], other.inst.NodeIP)
			waitFor(t, apiTimeout, n.name+": route "+want, func() (bool, error) {
				out, err := n.inst.Exec(ctx, "ip", "route", "show", "proto", "78")
				return strings.Contains(string(out), want), fmt.Errorf("%v: %s", err, out)
			})
		}
	})

	apply(t, podOn("web1", nodes[0].name, webScript("web1")+" & nc -ll -p 9000 -e netstat -tn", `    ports: [{containerPort: 8080, hostPort: 18081}]
`))
	apply(t, podOn("client2", nodes[1].name, "sleep 3600", ""))
	web1 := waitPodIP(t, "web1")
	waitPodIP(t, "client2")
	t.Run("pod to pod across nodes", func(t *testing.T) {
		if !strings.HasPrefix(web1, strings.TrimSuffix(cidr[nodes[0].name], "0/24")) {
			t.Errorf("web1's IP %s is not in %s's pod CIDR %s", web1, nodes[0].name, cidr[nodes[0].name])
		}
		out := mustKubectl(t, "exec", "client2", "--", "sh", "-c",
			fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 8080`, web1))
		if !strings.Contains(out, "hello from web1") {
			t.Errorf("client2 on %s fetching web1 (%s) on %s: %q", nodes[1].name, web1, nodes[0].name, out)
		}
	})
	t.Run("pod addresses kept across nodes", func(t *testing.T) {
		// web1 answers on 9000 with its own view of the connection.
		client2 := waitPodIP(t, "client2")
		waitFor(t, apiTimeout, "web1's answer on port 9000", func() (bool, error) {
			out, stderr, err := kubectl(t, "exec", "client2", "--", "sh", "-c", fmt.Sprintf("sleep 2 | nc -w 5 %s 9000", web1))
			if !strings.Contains(out, "ESTABLISHED") {
				return false, fmt.Errorf("%v %s", err, stderr)
			}
			if !strings.Contains(out, client2+":") {
				t.Fatalf("web1 does not see client2's address %s:\n%s", client2, out)
			}
			return true, nil
		})
	})
	t.Run("hostPort on the node's address", func(t *testing.T) {
		var d net.Dialer
		addr := net.JoinHostPort(nodes[0].inst.NodeIP, "18081")
		waitFor(t, apiTimeout, "hostPort "+addr, func() (bool, error) {
			body, err := httpGet(d.DialContext, addr)
			return strings.Contains(body, "hello from web1"), err
		})
	})
	t.Run("a node that leaves takes its route along", func(t *testing.T) {
		n1, n2 := nodes[0], nodes[1]
		mustKubectl(t, "delete", "pod", "client2", "--wait=true", "--timeout=90s")
		stopAgent(t, n2)
		mustKubectl(t, "delete", "node", n2.name)
		gone := cidr[n2.name] + " via"
		waitFor(t, apiTimeout, n1.name+": route to "+n2.name+" removed", func() (bool, error) {
			out, err := n1.inst.Exec(ctx, "ip", "route", "show", "proto", "78")
			return err == nil && !strings.Contains(string(out), gone), fmt.Errorf("%v: %s", err, out)
		})
	})
}
