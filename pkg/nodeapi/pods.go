package nodeapi

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/pkg/runtime"
)

// pod finds a pod the agent runs by namespace and name.
func (s *Server) pod(namespace, name string) *v1.Pod {
	for _, p := range s.cfg.Pods.Pods() {
		if p.Namespace == namespace && p.Name == name {
			return p
		}
	}
	return nil
}

// containerSpec finds a container, init container or ephemeral
// container by name.
func containerSpec(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if c := &pod.Spec.EphemeralContainers[i]; c.Name == name {
			return (*v1.Container)(&c.EphemeralContainerCommon)
		}
	}
	return nil
}

// containerStatus finds a container's status by name in any of the lists.
func containerStatus(pod *v1.Pod, name string) *v1.ContainerStatus {
	st := &pod.Status
	for _, list := range [][]v1.ContainerStatus{st.ContainerStatuses, st.InitContainerStatuses, st.EphemeralContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// runtimeID strips the "<runtime>://" of a status container ID.
func runtimeID(containerID string) string {
	if _, id, ok := strings.Cut(containerID, "://"); ok {
		return id
	}
	return containerID
}

// runningPods lists what the runtime runs (ready sandboxes and running
// containers, grouped by pod), not the desired pods of /pods.
func (s *Server) runningPods(w http.ResponseWriter, r *http.Request) {
	pods, err := s.listRunningPods(r.Context())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: pods})
}

func (s *Server) listRunningPods(ctx context.Context) ([]v1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, runtimeCallTimeout)
	defer cancel()
	sandboxes, err := s.cfg.Runtime.ListPodSandbox(ctx, &criv1.PodSandboxFilter{
		State: &criv1.PodSandboxStateValue{State: criv1.PodSandboxState_SANDBOX_READY}})
	if err != nil {
		return nil, err
	}
	containers, err := s.cfg.Runtime.ListContainers(ctx, &criv1.ContainerFilter{
		State: &criv1.ContainerStateValue{State: criv1.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]*v1.Pod{}
	podFor := func(labels map[string]string) *v1.Pod {
		ref, ok := runtime.PodRefFromLabels(labels)
		if !ok {
			return nil
		}
		if byUID[ref.UID] == nil {
			byUID[ref.UID] = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ref.Name, Namespace: ref.Namespace, UID: ref.UID}}
		}
		return byUID[ref.UID]
	}
	for _, sb := range sandboxes {
		podFor(sb.Labels)
	}
	for _, c := range containers {
		if p := podFor(c.Labels); p != nil {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c.GetMetadata().GetName(), Image: c.GetImage().GetImage()})
		}
	}
	out := make([]v1.Pod, 0, len(byUID))
	for _, p := range byUID {
		out = append(out, *p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// configz serves the effective configuration as the kubelet does.
func (s *Server) configz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, map[string]any{"kubeletconfig": s.cfg.Configz})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
