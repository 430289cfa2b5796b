package main

import (
	"crypto/md5" //nolint:gosec // an identifier, as the agent's static pod UID
	"encoding/hex"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeagent/nodeagent/pkg/podspec"
	"github.com/nodeagent/nodeagent/pkg/podutil"
	"github.com/nodeagent/nodeagent/test/framework"
)

// Facts of the agent as test/framework configures it.
const (
	nodeName   = "e2e-node"       // framework.NewAgent's NodeName
	cgroupRoot = "/nodeagent-e2e" // the cgroupRoot in framework.NewAgent's config
	namespace  = "default"        // static pods without a namespace
)

// benchPod is the pod both sides start: one busybox container that exits
// promptly on SIGTERM. The agent receives it as a manifest; the raw side
// derives its CRI requests from it.
func benchPod(name string) *v1.Pod {
	grace := int64(2)
	return &v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{
				Name:            "c",
				Image:           framework.BusyboxImage,
				ImagePullPolicy: v1.PullIfNotPresent,
				Command:         []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"},
			}},
		},
	}
}

// manifest is the pod as a manifest file (JSON is YAML).
func manifest(name string) []byte { return mustJSON(benchPod(name)) }

func mustJSON(pod *v1.Pod) []byte {
	b, err := json.Marshal(pod)
	if err != nil {
		panic(err) // a v1.Pod always marshals
	}
	return b
}

// runtimePod is the pod as the agent holds it after reading the manifest:
// defaulted, named <name>-<node>, with a static pod UID and annotations.
func runtimePod(name string) *v1.Pod {
	pod := benchPod(name)
	pod.Namespace = namespace
	pod.Name = podName(name)
	sum := md5.Sum([]byte("host:" + nodeName + "bench:" + name)) //nolint:gosec
	pod.UID = types.UID(hex.EncodeToString(sum[:]))
	pod.Annotations = map[string]string{
		podutil.ConfigSourceAnnotation: podutil.SourceFile,
		podutil.ConfigHashAnnotation:   string(pod.UID),
	}
	podspec.SetDefaults(pod)
	return pod
}

// podName is the name the agent gives a static pod from manifest name.
func podName(name string) string { return name + "-" + nodeName }

func podNames(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = podName(n)
	}
	return out
}

// seriesNames names the pods of one series: prefix-00, prefix-01, ...
// Every pod of the run has its own name, so a sighting is never stale.
func seriesNames(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%02d", prefix, i)
	}
	return out
}
