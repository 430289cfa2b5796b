package flow

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/nodeagent/nodeagent/test/framework"
)

// TestImagePullSecrets: pods pull from a registry that wants basic auth
// with the credentials of their image pull secrets, read by the agent
// through the API (the node authorizer lets it read what its pods name).
// A pod without the secret really tries and is refused (ErrImagePull, then
// ImagePullBackOff); a pod naming a missing secret gets the kubelet's
// FailedToRetrieveImagePullSecret event and pulls without it; a pod of a
// service account with image pull secrets inherits them at admission and
// pulls with them. Every pod has its own repository, so no pull is saved
// by an image another pod brought, but one: a pod without the secret for
// an image another pod pulled with it must pull it again (KEP-2535's
// default, NeverVerifyPreloadedImages), and is refused.
func TestImagePullSecrets(t *testing.T) {
	reg, err := framework.StartRegistry()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Close)
	images := map[string]string{}
	for name, repo := range map[string]string{
		"pull-secret": "private/pull-secret", "pull-none": "private/pull-none",
		"pull-missing": "flow/pull-missing", "pull-sa": "private/pull-sa",
	} {
		if images[name], err = reg.PushBusybox(repo, "1"); err != nil {
			t.Fatal(err)
		}
	}
	// Runs after the agent's cleanup: no container uses them any more.
	t.Cleanup(func() {
		for _, ref := range images {
			if _, err := cri.ImageServiceClient().RemoveImage(context.Background(), &criv1.RemoveImageRequest{Image: &criv1.ImageSpec{Image: ref}}); err != nil {
				t.Logf("remove image %s: %v", ref, err)
			}
		}
	})
	newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()

	auth := base64.StdEncoding.EncodeToString([]byte(reg.User + ":" + reg.Password))
	secret := &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "regcred"},
		Type:       v1.SecretTypeDockerConfigJson,
		Data:       map[string][]byte{v1.DockerConfigJsonKey: []byte(`{"auths":{"http://` + reg.Host + `":{"auth":"` + auth + `"}}}`)},
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "puller"}, ImagePullSecrets: []v1.LocalObjectReference{{Name: "regcred"}}}
	if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Cleanups run last-in first-out: the pods go before their secret.
	deleteOnCleanup(t, "secret/regcred", "serviceaccount/puller")

	pod := func(name string, secrets ...string) *v1.Pod {
		grace := int64(1)
		p := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{
				TerminationGracePeriodSeconds: &grace,
				Containers: []v1.Container{{Name: "main", Image: images[name], ImagePullPolicy: v1.PullIfNotPresent,
					Command: []string{"sh", "-c", sleeper}}},
			},
		}
		for _, s := range secrets {
			p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
		}
		return p
	}
	withSA := pod("pull-sa")
	withSA.Spec.ServiceAccountName = "puller"
	uids := map[string]types.UID{}
	for _, p := range []*v1.Pod{pod("pull-secret", "regcred"), pod("pull-none"), pod("pull-missing", "nothing-here"), withSA} {
		created, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uids[p.Name] = created.UID
		deleteOnCleanup(t, "pod/"+p.Name)
		if p.Name == "pull-sa" {
			if want := []v1.LocalObjectReference{{Name: "regcred"}}; !reflect.DeepEqual(created.Spec.ImagePullSecrets, want) {
				t.Errorf("pull-sa: imagePullSecrets %+v, want the service account's %+v", created.Spec.ImagePullSecrets, want)
			}
		}
	}

	t.Run("with the secret: pulled and running", func(t *testing.T) {
		waitPodRunning(t, "pull-secret")
	})
	t.Run("present image pulled with a secret: another pod without it must pull, and is refused", func(t *testing.T) {
		// KEP-2535's default: the image is on the node, but this pod has
		// no credentials for it, so the agent pulls again (anonymously).
		reuse := pod("pull-reuse")
		reuse.Spec.Containers[0].Image = images["pull-secret"]
		if _, err := admin.CoreV1().Pods("default").Create(ctx, reuse, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		deleteOnCleanup(t, "pod/pull-reuse")
		waitFor(t, apiTimeout, "pull-reuse to be refused the image", func() (bool, error) {
			p, err := admin.CoreV1().Pods("default").Get(ctx, "pull-reuse", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if cs := p.Status.ContainerStatuses; len(cs) == 1 && cs[0].State.Waiting != nil {
				if r := cs[0].State.Waiting.Reason; r == "ErrImagePull" || r == "ImagePullBackOff" {
					return true, nil
				}
			}
			return false, fmt.Errorf("phase %s containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
		})
		waitFor(t, apiTimeout, "pull-reuse's Pulling event: the present image was pulled again", func() (bool, error) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=pull-reuse,reason=Pulling"})
			if err != nil {
				return false, err
			}
			return len(evs.Items) > 0, fmt.Errorf("%d Pulling events", len(evs.Items))
		})
	})
	t.Run("service account's secret: pulled and running", func(t *testing.T) {
		waitPodRunning(t, "pull-sa")
	})
	t.Run("without a secret: refused by the registry", func(t *testing.T) {
		waiting := func(reasons ...string) *v1.ContainerStateWaiting {
			t.Helper()
			var w *v1.ContainerStateWaiting
			waitFor(t, apiTimeout, "pull-none waiting with "+strings.Join(reasons, " or "), func() (bool, error) {
				p, err := admin.CoreV1().Pods("default").Get(ctx, "pull-none", metav1.GetOptions{})
				if err != nil {
					return false, err
				}
				if len(p.Status.ContainerStatuses) == 1 {
					w = p.Status.ContainerStatuses[0].State.Waiting
				}
				for _, r := range reasons {
					if w != nil && w.Reason == r {
						return true, nil
					}
				}
				return false, fmt.Errorf("phase %s containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
			})
			return w
		}
		// ErrImagePull lasts until the next sync: either says why.
		w := waiting("ErrImagePull", "ImagePullBackOff")
		if !strings.Contains(w.Message, "401") && !strings.Contains(strings.ToLower(w.Message), "unauthorized") {
			t.Errorf("%s: message %q, want the registry's refusal", w.Reason, w.Message)
		}
		w = waiting("ImagePullBackOff")
		if !strings.HasPrefix(w.Message, `Back-off pulling image "`+images["pull-none"]+`": ErrImagePull: `) {
			t.Errorf("ImagePullBackOff message %q, want the back-off and the pull's error", w.Message)
		}
	})
	t.Run("missing secret: event, and the pull goes on", func(t *testing.T) {
		const msg = "Unable to retrieve some image pull secrets (nothing-here); attempting to pull the image may not succeed."
		waitFor(t, apiTimeout, "pull-missing's FailedToRetrieveImagePullSecret event", func() (bool, error) {
			evs, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
				FieldSelector: "involvedObject.name=pull-missing,reason=FailedToRetrieveImagePullSecret"})
			if err != nil {
				return false, err
			}
			for _, e := range evs.Items {
				if e.InvolvedObject.UID != uids["pull-missing"] {
					continue
				}
				if e.Type != v1.EventTypeWarning || e.Message != msg || e.Source.Component != "kubelet" || e.InvolvedObject.FieldPath != "" {
					return false, fmt.Errorf("event %s %q on %q from %+v, want Warning %q on the pod from the kubelet", e.Type, e.Message, e.InvolvedObject.FieldPath, e.Source, msg)
				}
				return true, nil
			}
			return false, fmt.Errorf("%d events, none for the pod", len(evs.Items))
		})
		waitPodRunning(t, "pull-missing")
	})
}
