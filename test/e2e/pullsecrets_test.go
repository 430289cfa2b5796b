package e2e

import (
	"strings"
	"testing"
)

// TestStaticPodPullSecrets: a static pod's image pull secrets cannot be
// read (a standalone agent has no API; joined, the node authorizer does
// not let a node read what only its static pods name), so the agent does
// what the kubelet does: it says so in a FailedToRetrieveImagePullSecret
// event and pulls with the node's credentials, here those of the
// registry's private repository.
func TestStaticPodPullSecrets(t *testing.T) {
	private, err := reg.PushBusybox("private/static-pull", "1")
	if err != nil {
		t.Fatal(err)
	}
	removeImage(t, private)
	a := newAgent(t)
	writeDockerConfig(t, a.RootDir, reg.Host, reg.User, reg.Password)
	// The node's credentials are read at start.
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	manifest := imagePod("static-pull", private, "IfNotPresent") + "  imagePullSecrets:\n  - name: regcred\n"
	if err := a.WriteManifest("static-pull.yaml", manifest); err != nil {
		t.Fatal(err)
	}
	if _, err := a.WaitPod("static-pull", podTimeout, running); err != nil {
		t.Fatal(err)
	}
	const msg = `Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed.`
	logs := a.Logs()
	if !strings.Contains(logs, "reason=FailedToRetrieveImagePullSecret") || !strings.Contains(logs, strings.ReplaceAll(msg, `"`, `\"`)) {
		t.Errorf("no FailedToRetrieveImagePullSecret event with %q in the agent log", msg)
	}
}
