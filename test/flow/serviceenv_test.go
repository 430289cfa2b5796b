package flow

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// serviceEnvPod prints its environment, and a value and an argument
// expanded from the service variables, then sleeps.
func serviceEnvPod(name string, links bool) string {
	return `apiVersion: v1
kind: Pod
metadata: {name: ` + name + `}
spec:
  terminationGracePeriodSeconds: 2
  enableServiceLinks: ` + strconv.FormatBool(links) + `
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "echo ARG=$1; env | sort; echo END; ` + sleeper + `", "sh", "$(SVCENV_WEB_SERVICE_HOST)"]
    env:
    - {name: WEB_URL, value: "http://$(SVCENV_WEB_SERVICE_HOST):$(SVCENV_WEB_SERVICE_PORT)/"}
`
}

// TestServiceEnvironmentVariables: every container gets the variables of
// the default namespace's kubernetes service (what rest.InClusterConfig
// reads); with enableServiceLinks (the default) those of its namespace's
// services too, usable in $(VAR) expansion; a headless service gives none.
func TestServiceEnvironmentVariables(t *testing.T) {
	ctx := context.Background()
	services := admin.CoreV1().Services("default")
	t.Cleanup(func() {
		_ = services.Delete(ctx, "svcenv-web", metav1.DeleteOptions{})
		_ = services.Delete(ctx, "svcenv-headless", metav1.DeleteOptions{})
	})
	// Before the agent starts: its first list of services has them, and
	// it starts no API pod's container before that list.
	web, err := services.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svcenv-web"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "svcenv-none"}, Ports: []v1.ServicePort{
			{Name: "http", Port: 8080, Protocol: v1.ProtocolTCP}, {Name: "dns", Port: 53, Protocol: v1.ProtocolUDP}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := services.Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "svcenv-headless"},
		Spec: v1.ServiceSpec{ClusterIP: v1.ClusterIPNone, Selector: map[string]string{"app": "svcenv-none"},
			Ports: []v1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	apiserver, err := services.Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kHost, kPort := apiserver.Spec.ClusterIP, strconv.Itoa(int(apiserver.Spec.Ports[0].Port))
	webIP := web.Spec.ClusterIP

	newAgent(t)
	waitSchedulable(t)
	deleteOnCleanup(t, "pod/svcenv-links", "pod/svcenv-nolinks")
	mustKubectl(t, "apply", "-f", writeTemp(t, "links.yaml", serviceEnvPod("svcenv-links", true)))
	mustKubectl(t, "apply", "-f", writeTemp(t, "nolinks.yaml", serviceEnvPod("svcenv-nolinks", false)))

	envOf := func(name string) map[string]string {
		waitPodRunning(t, name)
		var env map[string]string
		waitFor(t, apiTimeout, name+"'s environment in its log", func() (bool, error) {
			out, _, err := kubectl(t, "logs", name)
			if err != nil || !strings.Contains(out, "\nEND\n") {
				return false, fmt.Errorf("logs %q: %v", out, err)
			}
			env = map[string]string{}
			for _, line := range strings.Split(out, "\n") {
				if k, v, ok := strings.Cut(line, "="); ok {
					env[k] = v
				}
			}
			return true, nil
		})
		return env
	}
	kubernetesVars := map[string]string{
		"KUBERNETES_SERVICE_HOST": kHost,
		"KUBERNETES_SERVICE_PORT": kPort,
		"KUBERNETES_PORT":         "tcp://" + kHost + ":" + kPort,
	}

	links := envOf("svcenv-links")
	want := map[string]string{
		"SVCENV_WEB_SERVICE_HOST":       webIP,
		"SVCENV_WEB_SERVICE_PORT":       "8080",
		"SVCENV_WEB_SERVICE_PORT_HTTP":  "8080",
		"SVCENV_WEB_SERVICE_PORT_DNS":   "53",
		"SVCENV_WEB_PORT":               "tcp://" + webIP + ":8080",
		"SVCENV_WEB_PORT_53_UDP":        "udp://" + webIP + ":53",
		"SVCENV_WEB_PORT_53_UDP_PROTO":  "udp",
		"SVCENV_WEB_PORT_8080_TCP_ADDR": webIP,
		"WEB_URL":                       "http://" + webIP + ":8080/",
		"ARG":                           webIP,
	}
	for k, v := range kubernetesVars {
		want[k] = v
	}
	for k, v := range want {
		if links[k] != v {
			t.Errorf("svcenv-links: %s = %q, want %q", k, links[k], v)
		}
	}
	for k := range links {
		if strings.HasPrefix(k, "SVCENV_HEADLESS_") {
			t.Errorf("svcenv-links: %s set by a headless service", k)
		}
	}

	nolinks := envOf("svcenv-nolinks")
	for k, v := range kubernetesVars {
		if nolinks[k] != v {
			t.Errorf("svcenv-nolinks: %s = %q, want %q", k, nolinks[k], v)
		}
	}
	for k := range nolinks {
		if strings.HasPrefix(k, "SVCENV_") {
			t.Errorf("svcenv-nolinks (enableServiceLinks false): %s=%s set", k, nolinks[k])
		}
	}
	// Unexpanded: the variables it refers to are not defined.
	if nolinks["WEB_URL"] != "http://$(SVCENV_WEB_SERVICE_HOST):$(SVCENV_WEB_SERVICE_PORT)/" || nolinks["ARG"] != "$(SVCENV_WEB_SERVICE_HOST)" {
		t.Errorf("svcenv-nolinks: WEB_URL %q ARG %q, want them unexpanded", nolinks["WEB_URL"], nolinks["ARG"])
	}

	mustKubectl(t, "delete", "pod", "svcenv-links", "svcenv-nolinks", "--timeout=90s")
	waitPodGone(t, "svcenv-links")
	waitPodGone(t, "svcenv-nolinks")
}
