package podtrace

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// PathPattern is the node API's route of a pod's trace; Path fills it.
const PathPattern = "/debug/pods/{namespace}/{pod}/trace"

// Path is the node API path of the pod's trace.
func Path(namespace, name string) string {
	return fmt.Sprintf("/debug/pods/%s/%s/trace", namespace, name)
}

// fetchTimeout bounds each API call of Fetch.
const fetchTimeout = 30 * time.Second

// Fetched is what the timeline is made of. TraceErr says why Trace is
// nil (the pod is not bound, its node's agent has no trace of it, or the
// node proxy refused).
type Fetched struct {
	Pod      *v1.Pod
	Events   []v1.Event
	Trace    *Trace
	TraceErr error
}

// Fetch reads the pod and its events from the API, and its step log from
// its node's agent through the API server's node proxy
// (nodes/<node>/proxy/debug/pods/...).
func Fetch(ctx context.Context, c kubernetes.Interface, namespace, name string) (*Fetched, error) {
	cctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	pod, err := c.CoreV1().Pods(namespace).Get(cctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	sel := fields.Set{"involvedObject.uid": string(pod.UID)}.AsSelector().String()
	evs, err := c.CoreV1().Events(namespace).List(cctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list events: %w", err)
	}
	f := &Fetched{Pod: pod, Events: evs.Items}
	f.Trace, f.TraceErr = fetchTrace(ctx, c, pod)
	return f, nil
}

func fetchTrace(ctx context.Context, c kubernetes.Interface, pod *v1.Pod) (*Trace, error) {
	if pod.Spec.NodeName == "" {
		return nil, fmt.Errorf("pod %s/%s is not bound to a node", pod.Namespace, pod.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	body, err := c.CoreV1().RESTClient().Get().
		AbsPath("/api/v1/nodes", pod.Spec.NodeName, "proxy", Path(pod.Namespace, pod.Name)).
		Param("uid", string(pod.UID)).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("step log from node %s: %w", pod.Spec.NodeName, err)
	}
	var t Trace
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("step log from node %s: %w", pod.Spec.NodeName, err)
	}
	return &t, nil
}
