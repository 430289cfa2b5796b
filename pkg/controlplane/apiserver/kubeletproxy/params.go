package kubeletproxy

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Query parameters are read as upstream's parameter codec converts them:
// a boolean is true when present with any value but "false" or "0"; a
// malformed number is a 400 with the parser's message.

func boolParam(q url.Values, name string) bool {
	v, ok := q[name]
	if !ok || len(v) == 0 {
		return false
	}
	return v[0] != "0" && !strings.EqualFold(v[0], "false")
}

func int64Param(q url.Values, name string) (*int64, error) {
	v := q.Get(name)
	if v == "" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return &n, nil
}

// int32Params reads a repeated integer parameter (portforward's ports).
func int32Params(q url.Values, name string) ([]int32, error) {
	var out []int32
	for _, v := range q[name] {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		out = append(out, int32(n))
	}
	return out, nil
}

// podContainer picks the container a log, exec or attach request is for,
// with upstream's messages: the only container when none is named, and a
// named one must exist in the pod (init, regular or ephemeral). The
// kubectl.kubernetes.io/default-container annotation is kubectl's to
// apply, not the server's.
func podContainer(pod *v1.Pod, name string) (string, error) {
	if name != "" {
		if !slices.Contains(allContainerNames(pod), name) {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
		}
		return name, nil
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %s", pod.Name, allContainerNames(pod)))
}

// allContainerNames lists init, regular and ephemeral containers, in the
// order upstream's VisitContainers walks them.
func allContainerNames(pod *v1.Pod) []string {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	return names
}
