package main

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/nodeagent/nodeagent/pkg/podworker/criconfig"
	nart "github.com/nodeagent/nodeagent/pkg/runtime"
)

// The floor is only a floor if the runtime gets the same work from it as
// from the agent: the parts of the requests that decide what runc and the
// CNI plugins do must be the agent's own translation of the bench pod.
func TestRawRequestsMatchTheAgents(t *testing.T) {
	for _, beside := range []bool{false, true} {
		rawMatchesAgent(t, &rawRunner{dir: t.TempDir(), besideAgent: beside})
	}
}

func rawMatchesAgent(t *testing.T, r *rawRunner) {
	t.Helper()
	pod := runtimePod("match")
	node := criconfig.Node{Name: nodeName, CgroupRoot: cgroupRoot, PodLogsDir: "/logs"}

	agentSb, err := criconfig.SandboxConfig(pod, node, 0)
	if err != nil {
		t.Fatal(err)
	}
	rawSb := r.sandboxConfig(pod)
	if !proto.Equal(rawSb.GetLinux().GetSecurityContext(), agentSb.GetLinux().GetSecurityContext()) {
		t.Errorf("sandbox security context:\nraw   %v\nagent %v", rawSb.GetLinux().GetSecurityContext(), agentSb.GetLinux().GetSecurityContext())
	}
	if rawSb.GetLinux().GetCgroupParent() != agentSb.GetLinux().GetCgroupParent() {
		t.Errorf("cgroup parent: raw %q, agent %q", rawSb.GetLinux().GetCgroupParent(), agentSb.GetLinux().GetCgroupParent())
	}
	if len(rawSb.GetPortMappings()) != len(agentSb.GetPortMappings()) {
		t.Errorf("port mappings: raw %v, agent %v", rawSb.GetPortMappings(), agentSb.GetPortMappings())
	}

	agentC, err := criconfig.ContainerConfig(pod, &pod.Spec.Containers[0], node, criconfig.ContainerInputs{
		ImageRef: "sha256:img", TermMessagePath: "/term", EtcHostsPath: "/hosts",
		UserNamespace: agentSb.GetLinux().GetSecurityContext().GetNamespaceOptions().GetUsernsOptions(),
	})
	if err != nil {
		t.Fatal(err)
	}
	rawC := r.containerConfig(pod, "sha256:img", nil)
	if !proto.Equal(rawC.GetLinux().GetSecurityContext(), agentC.GetLinux().GetSecurityContext()) {
		t.Errorf("container security context:\nraw   %v\nagent %v", rawC.GetLinux().GetSecurityContext(), agentC.GetLinux().GetSecurityContext())
	}
	if !proto.Equal(rawC.GetLinux().GetResources(), agentC.GetLinux().GetResources()) {
		t.Errorf("container resources:\nraw   %v\nagent %v", rawC.GetLinux().GetResources(), agentC.GetLinux().GetResources())
	}
	if !slices.Equal(rawC.GetCommand(), agentC.GetCommand()) {
		t.Errorf("command: raw %v, agent %v", rawC.GetCommand(), agentC.GetCommand())
	}
}

// An API pod's container gets, as the agent's, a read-only bind mount of
// the service account volume and the kubernetes Service's variables.
func TestRawAPIPodMountsTheServiceAccountVolume(t *testing.T) {
	pod := runtimePod("api")
	r := &rawRunner{dir: t.TempDir(), apiPod: true}
	sb := r.sandboxConfig(pod)
	sb.LogDirectory = t.TempDir()
	mounts, err := r.prepareFiles(pod, sb)
	if err != nil {
		t.Fatal(err)
	}
	if len(mounts) != 3 || mounts[0].ContainerPath != serviceAccountDir || !mounts[0].Readonly {
		t.Fatalf("mounts %v: want the service account directory first, read-only, then /etc/hosts and the termination log", mounts)
	}
	if got := len(r.containerConfig(pod, "sha256:img", mounts).GetEnvs()); got != len(kubernetesServiceEnv) {
		t.Errorf("%d variables, want %d", got, len(kubernetesServiceEnv))
	}
	r.apiPod = false
	if mounts, _ := r.prepareFiles(pod, sb); len(mounts) != 2 {
		t.Errorf("static pod mounts %v, want /etc/hosts and the termination log", mounts)
	}
}

// Beside an agent the raw pods are not the agent's: it removes only
// sandboxes and containers it can tie to a pod UID.
func TestRawPodsBesideAnAgentAreNotItsPods(t *testing.T) {
	pod := runtimePod("beside")
	r := &rawRunner{dir: t.TempDir(), besideAgent: true}
	sb := r.sandboxConfig(pod)
	c := r.containerConfig(pod, "sha256:img", nil)
	for what, labels := range map[string]map[string]string{"sandbox": sb.GetLabels(), "container": c.GetLabels()} {
		if ref, ok := nart.PodRefFromLabels(labels); ok {
			t.Errorf("%s labels %v name the agent's pod %v", what, labels, ref)
		}
		if labels[nart.LabelPodName] != pod.Name || labels[benchPodUIDLabel] != string(pod.UID) {
			t.Errorf("%s labels %v: want the pod name and the bench's UID label", what, labels)
		}
	}
	r.besideAgent = false
	if _, ok := nart.PodRefFromLabels(r.sandboxConfig(pod).GetLabels()); !ok {
		t.Error("without an agent the sandbox lacks the kubelet's pod UID label")
	}
}
