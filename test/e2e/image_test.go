package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func imagePod(name, image, policy string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    imagePullPolicy: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]
`, name, image, policy)
}

func waitingReason(reason string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == reason
	}
}

// removeImage deletes an image the test pulled, so the runtime is left as found.
func removeImage(t *testing.T, ref string) {
	t.Cleanup(func() {
		ctx := context.Background()
		st, err := cri.ImageStatus(ctx, &criv1.ImageSpec{Image: ref}, false)
		if err != nil || st.GetImage() == nil {
			return
		}
		if _, err := criImages(t).RemoveImage(ctx, &criv1.RemoveImageRequest{Image: &criv1.ImageSpec{Image: ref}}); err != nil {
			t.Errorf("remove image %s: %v", ref, err)
		}
	})
}

func TestImagePulls(t *testing.T) {
	public, err := reg.PushBusybox("e2e/busybox", "1")
	if err != nil {
		t.Fatal(err)
	}
	private, err := reg.PushBusybox("private/busybox", "1")
	if err != nil {
		t.Fatal(err)
	}
	removeImage(t, public)
	removeImage(t, private)

	a := newAgent(t)
	// Wrong credentials for the private repository, in the kubelet's
	// config.json location under the root directory.
	writeDockerConfig(t, a.RootDir, reg.Host, reg.User, "wrong-password")

	for name, m := range map[string]string{
		"pulled":  imagePod("pulled", public, "Always"),
		"denied":  imagePod("denied", private, "IfNotPresent"),
		"missing": imagePod("missing", reg.Host+"/e2e/nothing:1", "IfNotPresent"),
		"never":   imagePod("never", reg.Host+"/e2e/absent:1", "Never"),
		"invalid": imagePod("invalid", "Not_A/Valid//Image", "IfNotPresent"),
	} {
		if err := a.WriteManifest(name+".yaml", m); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("pull from registry", func(t *testing.T) {
		p, err := a.WaitPod("pulled", podTimeout, running)
		if err != nil {
			t.Fatal(err)
		}
		if id := p.Status.ContainerStatuses[0].ImageID; id == "" {
			t.Errorf("imageID empty")
		}
		if !strings.Contains(a.Logs(), `Successfully pulled image \"`+public+`\"`) {
			t.Errorf("no Pulled event for %s in the agent log", public)
		}
	})
	t.Run("wrong credentials -> ErrImagePull then ImagePullBackOff", func(t *testing.T) {
		p, err := a.WaitPod("denied", podTimeout, waitingReason("ErrImagePull"))
		if err != nil {
			t.Fatal(err)
		}
		if msg := p.Status.ContainerStatuses[0].State.Waiting.Message; !strings.Contains(msg, "401") && !strings.Contains(strings.ToLower(msg), "unauthorized") {
			t.Errorf("message should say unauthorized: %q", msg)
		}
		if _, err := a.WaitPod("denied", podTimeout, waitingReason("ImagePullBackOff")); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("right credentials -> pulled", func(t *testing.T) {
		writeDockerConfig(t, a.RootDir, reg.Host, reg.User, reg.Password)
		// Credentials are read at start: restart the agent to pick them up.
		if err := a.Stop(); err != nil {
			t.Fatal(err)
		}
		if err := a.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := a.WaitPod("denied", podTimeout, running); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("missing image -> ErrImagePull", func(t *testing.T) {
		p, err := a.WaitPod("missing", podTimeout, func(p *v1.Pod) bool {
			return waitingReason("ErrImagePull")(p) || waitingReason("ImagePullBackOff")(p)
		})
		if err != nil {
			t.Fatal(err)
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		if w.Reason == "ErrImagePull" && !strings.Contains(w.Message, "not found") {
			t.Errorf("message should say not found: %q", w.Message)
		}
	})
	t.Run("Never and absent -> ErrImageNeverPull", func(t *testing.T) {
		p, err := a.WaitPod("never", podTimeout, waitingReason("ErrImageNeverPull"))
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("Container image %q is not present with pull policy of Never", reg.Host+"/e2e/absent:1")
		if got := p.Status.ContainerStatuses[0].State.Waiting.Message; got != want {
			t.Errorf("message %q, want %q", got, want)
		}
	})
	t.Run("invalid name -> InvalidImageName", func(t *testing.T) {
		if _, err := a.WaitPod("invalid", podTimeout, waitingReason("InvalidImageName")); err != nil {
			t.Fatal(err)
		}
	})
}

func writeDockerConfig(t *testing.T, dir, host, user, password string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	cfg := fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth)
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func criImages(t *testing.T) criv1.ImageServiceClient {
	t.Helper()
	return cri.ImageServiceClient()
}
