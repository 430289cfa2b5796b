package flow

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
	"github.com/nodeagent/nodeagent/test/framework"
)

// whyCase is one situation: a pod made to be in it, the state the API
// shows once it is, and the words `nodeagent why` must say then.
type whyCase struct {
	name  string
	pod   *v1.Pod
	ready func(*v1.Pod) bool
	words []string
}

// TestWhy: `nodeagent why pod NAME` names the component that holds each
// pod and why, in the words the scheduler and the agent wrote: no node
// with the CPU asked for, an unbound claim, a missing configMap (in the
// environment) and secret (a volume), an image the registry does not have,
// a container that keeps exiting (with its code and its previous log), one
// its liveness probe kills, one OOMKilled, a failing readiness probe, and a
// healthy pod. All the pods are created at once on one agent, so the test
// takes as long as the slowest situation. A node that is NotReady is unit
// tested only (pkg/diagnose): it needs the agent stopped for the node
// lifecycle's grace period.
func TestWhy(t *testing.T) {
	reg, err := framework.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close) // after the agent's cleanup
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	claims := admin.CoreV1().PersistentVolumeClaims("default")
	empty := ""
	if _, err := claims.Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "why-claim"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &empty,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = claims.Delete(context.Background(), "why-claim", metav1.DeleteOptions{}) })

	cases := whyCases(reg.Host + "/why/missing:1")
	for _, tc := range cases {
		createWhyPod(t, tc.pod)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			waitWhyState(t, tc)
			var out string
			waitFor(t, apiTimeout, "nodeagent why to say "+strings.Join(tc.words, ", "), func() (bool, error) {
				out = runWhy(t, tc.pod.Name)
				for _, w := range tc.words {
					if !strings.Contains(out, w) {
						return false, fmt.Errorf("no %q in %q", w, out)
					}
				}
				return true, nil
			})
			t.Logf("nodeagent why pod %s: %s", tc.pod.Name, out)
		})
	}
}

func whyCases(missingImage string) []whyCase {
	exits := "echo why-crash-line-1; echo why-crash-line-2; exit 3"
	return []whyCase{
		{
			name: "unschedulable",
			pod: whyPod("why-big", sleeper, func(c *v1.Container) {
				c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100")}
			}),
			ready: podScheduledFalse,
			words: []string{"Pod default/why-big is Pending: the scheduler found no node that fits it",
				"Insufficient cpu", "the pod requests cpu: 100"},
		},
		{
			name: "unbound claim",
			pod: withVolume(whyPod("why-pvc", sleeper, nil), v1.Volume{Name: "data",
				VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "why-claim"}}}),
			ready: podScheduledFalse,
			words: []string{`the scheduler waits for its PersistentVolumeClaim "why-claim", which is not bound to a volume (Pending)`,
				"no persistent volumes available for this claim and no storage class is set",
				"pod has unbound immediate PersistentVolumeClaims"},
		},
		{
			name: "missing configMap",
			pod: whyPod("why-configmap", sleeper, func(c *v1.Container) {
				c.Env = []v1.EnvVar{{Name: "SETTING", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
					LocalObjectReference: v1.LocalObjectReference{Name: "why-missing"}, Key: "setting"}}}}
			}),
			ready: waitingIn("CreateContainerConfigError"),
			words: []string{"Pod default/why-configmap is Pending (CreateContainerConfigError): the kubelet on node " + nodeName +
				` cannot start container main: configmap "why-missing" not found`},
		},
		{
			name: "missing secret volume",
			pod: withVolume(whyPod("why-secret", sleeper, nil), v1.Volume{Name: "creds",
				VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "why-missing"}}}),
			ready: waitingIn("ContainerCreating"),
			words: []string{"Pod default/why-secret is Pending (ContainerCreating): the kubelet on node " + nodeName + " cannot mount its volumes",
				`event FailedMount`, `MountVolume.SetUp failed for volume \"creds\" : secret \"why-missing\" not found`},
		},
		{
			name: "missing image",
			pod: whyPod("why-image", sleeper, func(c *v1.Container) {
				c.Image, c.ImagePullPolicy = missingImage, v1.PullIfNotPresent
			}),
			ready: waitingIn("ErrImagePull", "ImagePullBackOff"),
			words: []string{fmt.Sprintf("the kubelet on node %s cannot pull image %q for container main", nodeName, missingImage),
				`event Failed from kubelet: "Failed to pull image \"` + missingImage, "not found"},
		},
		{
			name:  "crash loop",
			pod:   whyPod("why-crash", exits, nil),
			ready: waitingIn("CrashLoopBackOff"),
			words: []string{"Pod default/why-crash is Running (CrashLoopBackOff): container main keeps exiting with code 3",
				"last state: terminated, exit code 3 (Error)",
				`last lines of logs --previous: "why-crash-line-1" / "why-crash-line-2"`},
		},
		{
			name: "liveness probe kills",
			pod: whyPod("why-liveness", sleeper, func(c *v1.Container) {
				c.LivenessProbe = &v1.Probe{PeriodSeconds: 1, FailureThreshold: 1,
					ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/why-alive"}}}}
			}),
			// The agent restarts a container its liveness probe killed
			// at once every time (upstream backs off from the previous
			// instance's exit), so the pod is Running and Ready between
			// kills: why says so, with the kills as evidence; in back-off
			// it would say "is killed for failing its liveness probe".
			ready: func(p *v1.Pod) bool {
				return len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount >= 2
			},
			words: []string{`event Killing`, "Container main failed liveness probe, will be restarted",
				`Liveness probe failed: cat: can't open '/tmp/why-alive'`},
		},
		{
			name: "OOMKilled",
			pod: whyPod("why-oom", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo never`, func(c *v1.Container) {
				c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("32Mi")}
			}),
			ready: lastTerminated("OOMKilled"),
			words: []string{"container main was OOMKilled (its memory limit is 32Mi)", "exit code 137 (OOMKilled)"},
		},
		{
			name: "readiness probe fails",
			pod: whyPod("why-unready", sleeper, func(c *v1.Container) {
				c.ReadinessProbe = &v1.Probe{PeriodSeconds: 1,
					ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/why-ready"}}}}
			}),
			ready: runningNotReady,
			words: []string{"Pod default/why-unready is Running but not Ready: the readiness probe of container main fails",
				`Readiness probe failed: cat: can't open '/tmp/why-ready'`},
		},
		{
			name:  "healthy",
			pod:   whyPod("why-healthy", sleeper, nil),
			ready: func(p *v1.Pod) bool { return runningPod(p) && podReady(p) },
			words: []string{"Pod default/why-healthy is Running and Ready on node " + nodeName, "1/1 containers ready"},
		},
	}
}

// whyPod is a busybox pod running script, scheduled by the scheduler.
func whyPod(name, script string, tweak func(*v1.Container)) *v1.Pod {
	grace := int64(1)
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "main", Image: framework.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}}},
		},
	}
	if tweak != nil {
		tweak(&p.Spec.Containers[0])
	}
	return p
}

func withVolume(p *v1.Pod, vol v1.Volume) *v1.Pod {
	p.Spec.Volumes = append(p.Spec.Volumes, vol)
	p.Spec.Containers[0].VolumeMounts = append(p.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: vol.Name, MountPath: "/mnt/" + vol.Name})
	return p
}

// createWhyPod creates the pod; cleanup deletes it and waits until it is
// gone, before the agent's cleanup looks for an empty runtime.
func createWhyPod(t *testing.T, pod *v1.Pod) {
	t.Helper()
	pods := admin.CoreV1().Pods("default")
	if _, err := pods.Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		zero := int64(0)
		if err := pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete pod %s: %v", pod.Name, err)
		}
		waitPodGone(t, pod.Name)
	})
}

// waitWhyState waits until the API shows the pod in the case's state.
func waitWhyState(t *testing.T, tc whyCase) {
	t.Helper()
	waitFor(t, apiTimeout, "pod "+tc.pod.Name+" in its state", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(context.Background(), tc.pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return tc.ready(p), fmt.Errorf("phase %s conditions %+v containers %+v", p.Status.Phase, p.Status.Conditions, p.Status.ContainerStatuses)
	})
}

// runWhy runs `nodeagent why pod NAME` as the admin.
func runWhy(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, agentBin, "why", "pod", name, "-n", "default",
		"--kubeconfig", filepath.Join(dataDir, server.KubeconfigFile))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("nodeagent why pod %s: %v\n%s%s", name, err, stdout.String(), stderr.String())
	}
	if stderr.Len() > 0 {
		t.Logf("nodeagent why pod %s stderr: %s", name, stderr.String())
	}
	return strings.TrimSpace(stdout.String())
}

func podScheduledFalse(p *v1.Pod) bool {
	c := podCondition(p, v1.PodScheduled)
	return c != nil && c.Status == v1.ConditionFalse
}

func podReady(p *v1.Pod) bool {
	c := podCondition(p, v1.PodReady)
	return c != nil && c.Status == v1.ConditionTrue
}

func runningNotReady(p *v1.Pod) bool { return runningPod(p) && !podReady(p) }

// waitingIn: the pod's container waits with one of the reasons.
func waitingIn(reasons ...string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil {
				for _, r := range reasons {
					if w.Reason == r {
						return true
					}
				}
			}
		}
		return false
	}
}

// lastTerminated: the pod's container's last instance ended for reason.
func lastTerminated(reason string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == reason {
				return true
			}
		}
		return false
	}
}
