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

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// podOn is a busybox pod pinned to a node, running script; the web pods
// (named web*) are labelled tier=web, the service's selector.
func podOn(name, nodeName, script string, extra string) string {
	tier := "client"
	if strings.HasPrefix(name, "web") {
		tier = "web"
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default, labels: {app: %s, tier: %s}}
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", %q]
%s`, name, name, tier, nodeName, framework.BusyboxImage, "trap 'exit 0' TERM; "+script+" & wait", extra)
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
	apply(t, podOn("web2", nodes[1].name, "touch /tmp/ready; "+webScript("web2"), `    readinessProbe:
      exec: {command: [cat, /tmp/ready]}
      periodSeconds: 1
`))
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
	waitPodIP(t, "web2")
	apply(t, `apiVersion: v1
kind: Service
metadata: {name: web, namespace: default}
spec:
  type: NodePort
  selector: {tier: web}
  ports: [{name: http, port: 80, targetPort: 8080}]
`)
	svc, err := cp.Admin.CoreV1().Services("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clusterIP, nodePort := svc.Spec.ClusterIP, svc.Spec.Ports[0].NodePort
	// fetch asks the service n times from client2 and counts who answered.
	fetch := func(n int) (map[string]int, error) {
		out, stderr, err := kubectl(t, "exec", "client2", "--", "sh", "-c", fmt.Sprintf(
			`for i in $(seq %d); do printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 3 %s 80 | grep hello; done`, n, clusterIP))
		seen := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			if f := strings.Fields(line); len(f) == 3 {
				seen[f[2]]++
			}
		}
		if err != nil {
			return seen, fmt.Errorf("%v: %s", err, stderr)
		}
		return seen, nil
	}
	t.Run("ClusterIP load-balances over both nodes", func(t *testing.T) {
		waitFor(t, apiTimeout, "answers from web1 and web2 through "+clusterIP, func() (bool, error) {
			seen, err := fetch(20)
			return seen["web1"] > 0 && seen["web2"] > 0 && seen["web1"]+seen["web2"] == 20, fmt.Errorf("%v %v", seen, err)
		})
	})
	t.Run("an unready pod is dropped", func(t *testing.T) {
		mustKubectl(t, "exec", "web2", "--", "rm", "/tmp/ready")
		waitFor(t, apiTimeout, "only web1 answering", func() (bool, error) {
			seen, err := fetch(10)
			if seen["web1"] != 10 {
				ready, _, _ := kubectl(t, "get", "pod", "web2", "-o", "jsonpath={.status.conditions}")
				slices, _, _ := kubectl(t, "get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "jsonpath={.items[*].endpoints}")
				return false, fmt.Errorf("%v %v; web2 conditions %s; slices %s", seen, err, ready, slices)
			}
			return true, nil
		})
		mustKubectl(t, "exec", "web2", "--", "touch", "/tmp/ready")
		waitFor(t, apiTimeout, "web2 back", func() (bool, error) {
			seen, err := fetch(20)
			return seen["web2"] > 0, fmt.Errorf("%v %v", seen, err)
		})
	})
	t.Run("sessionAffinity ClientIP keeps a client on one pod", func(t *testing.T) {
		mustKubectl(t, "patch", "service", "web", "-p", `{"spec":{"sessionAffinity":"ClientIP"}}`)
		waitFor(t, apiTimeout, "20 answers from one pod", func() (bool, error) {
			seen, err := fetch(20)
			return len(seen) == 1 && (seen["web1"] == 20 || seen["web2"] == 20), fmt.Errorf("%v %v", seen, err)
		})
		mustKubectl(t, "patch", "service", "web", "-p", `{"spec":{"sessionAffinity":"None"}}`)
	})
	t.Run("NodePort from the host", func(t *testing.T) {
		var d net.Dialer
		for _, n := range nodes {
			addr := net.JoinHostPort(n.inst.NodeIP, fmt.Sprint(nodePort))
			waitFor(t, apiTimeout, "NodePort "+addr, func() (bool, error) {
				body, err := httpGet(d.DialContext, addr)
				return strings.Contains(body, "hello from web"), err
			})
		}
	})
	t.Run("cluster DNS from inside a pod", func(t *testing.T) {
		waitFor(t, apiTimeout, "nslookup web.default.svc.cluster.local", func() (bool, error) {
			out, stderr, err := kubectl(t, "exec", "client2", "--", "nslookup", "web.default.svc.cluster.local")
			return strings.Contains(out, "Address: "+clusterIP), fmt.Errorf("%v %s %s", err, out, stderr)
		})
		// Short names through the pod's search path (busybox's nslookup
		// does not search; its ping resolves as the C library does).
		for name, want := range map[string]string{"web": clusterIP, "web.default": clusterIP, "kubernetes.default.svc": "10.96.0.1"} {
			out, _, _ := kubectl(t, "exec", "client2", "--", "ping", "-c", "1", "-W", "1", name)
			if !strings.Contains(out, "("+want+")") {
				t.Errorf("%s does not resolve to %s: %q", name, want, out)
			}
		}
		// The API server through default/kubernetes (its endpoint is the
		// server's address, kept by the server itself).
		waitFor(t, apiTimeout, "a TCP connection to kubernetes.default.svc:443", func() (bool, error) {
			out, stderr, err := kubectl(t, "exec", "client2", "--", "sh", "-c", "nc -w 3 kubernetes.default.svc 443 </dev/null && echo connected")
			return strings.Contains(out, "connected"), fmt.Errorf("%v %s", err, stderr)
		})
		// Pods may have outside names resolved (the answer depends on the
		// host's resolvers; REFUSED is what everyone else gets).
		if out, stderr, _ := kubectl(t, "exec", "client2", "--", "nslookup", "example.org"); strings.Contains(out+stderr, "REFUSED") {
			t.Errorf("a pod resolving example.org: %s %s", out, stderr)
		}
		out := mustKubectl(t, "exec", "client2", "--", "cat", "/etc/resolv.conf")
		if !strings.Contains(out, "nameserver "+server.KubeDNSServiceIP) || !strings.Contains(out, "search default.svc.cluster.local svc.cluster.local cluster.local") {
			t.Errorf("client2's resolv.conf:\n%s", out)
		}
	})
	t.Run("hostNetwork pod with ClusterFirstWithHostNet", func(t *testing.T) {
		apply(t, podOn("hostnet1", nodes[0].name, "mkdir /www; echo hello from hostnet1 > /www/index.html; httpd -f -p 18090 -h /www",
			"  hostNetwork: true\n  dnsPolicy: ClusterFirstWithHostNet\n"))
		if ip := waitPodIP(t, "hostnet1"); ip != nodes[0].inst.NodeIP {
			t.Errorf("hostNetwork pod's IP = %s, want its node's %s", ip, nodes[0].inst.NodeIP)
		}
		out := mustKubectl(t, "exec", "client2", "--", "sh", "-c",
			fmt.Sprintf(`printf 'GET / HTTP/1.0\r\n\r\n' | nc -w 5 %s 18090`, nodes[0].inst.NodeIP))
		if !strings.Contains(out, "hello from hostnet1") {
			t.Errorf("a pod on the other node fetching the hostNetwork pod: %q", out)
		}
		// The node's network, the cluster's names.
		out, _, _ = kubectl(t, "exec", "hostnet1", "--", "ping", "-c", "1", "-W", "1", "web")
		if !strings.Contains(out, "("+clusterIP+")") {
			t.Errorf("hostNetwork pod resolving web: %q", out)
		}
	})
	t.Run("a node that leaves takes its route along", func(t *testing.T) {
		n1, n2 := nodes[0], nodes[1]
		mustKubectl(t, "delete", "pod", "client2", "web2", "--wait=true", "--timeout=90s")
		stopAgent(t, n2)
		mustKubectl(t, "delete", "node", n2.name)
		gone := cidr[n2.name] + " via"
		waitFor(t, apiTimeout, n1.name+": route to "+n2.name+" removed", func() (bool, error) {
			out, err := n1.inst.Exec(ctx, "ip", "route", "show", "proto", "78")
			return err == nil && !strings.Contains(string(out), gone), fmt.Errorf("%v: %s", err, out)
		})
	})
}
