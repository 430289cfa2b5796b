package controlplane_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRolloutHistoryUndo is `kubectl rollout history` and `kubectl rollout
// undo`, which work on the ReplicaSets the Deployment controller keeps:
// their revision and change-cause annotations, their templates (undo
// copies one back into the Deployment, client side).
func TestRolloutHistoryUndo(t *testing.T) {
	ns := namespace(t)
	mustKubectl(t, "-n", ns, "create", "deployment", "web", "--image=busybox:1")
	waitRevision(t, ns, "1")
	// The controllers' events, as kube-controller-manager's.
	describe := regexp.MustCompile(`(?m)^\s+Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set web-[a-z0-9]+ from 0 to 1$`)
	for deadline := time.Now().Add(eventTimeout); ; time.Sleep(200 * time.Millisecond) {
		out := mustKubectl(t, "-n", ns, "describe", "deployment", "web")
		if describe.MatchString(out) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("describe deployment: no ScalingReplicaSet event within %s in %q", eventTimeout, out)
		}
	}
	if out := mustKubectl(t, "-n", ns, "set", "image", "deployment/web", "busybox=busybox:2"); out != "deployment.apps/web image updated\n" {
		t.Errorf("set image: got %q", out)
	}
	waitRevision(t, ns, "2")
	// Image and change cause in one write, so that only the third
	// ReplicaSet gets the cause.
	mustKubectl(t, "-n", ns, "patch", "deployment", "web", "-p",
		`{"metadata":{"annotations":{"kubernetes.io/change-cause":"to busybox:3"}},"spec":{"template":{"spec":{"containers":[{"name":"busybox","image":"busybox:3"}]}}}}`)
	waitRevision(t, ns, "3")
	checkHistory(t, ns, [][]string{{"1", "<none>"}, {"2", "<none>"}, {"3", "to busybox:3"}})

	if out := mustKubectl(t, "-n", ns, "rollout", "undo", "deployment/web", "--to-revision=1"); out != "deployment.apps/web rolled back\n" {
		t.Errorf("rollout undo --to-revision=1: got %q", out)
	}
	// The first ReplicaSet is the new one again, as revision 4.
	waitRevision(t, ns, "4")
	if img := mustKubectl(t, "-n", ns, "get", "deployment", "web", "-o", "jsonpath={.spec.template.spec.containers[0].image}"); img != "busybox:1" {
		t.Errorf("image after undo to revision 1: %q", img)
	}
	checkHistory(t, ns, [][]string{{"2", "<none>"}, {"3", "to busybox:3"}, {"4", "<none>"}})
	checkRevisionTemplate(t, ns, "4", "busybox:1")
	checkRevisionTemplate(t, ns, "3", "busybox:3")

	// Without --to-revision: back to the previous one (3), with its
	// change cause restored on the Deployment.
	mustKubectl(t, "-n", ns, "rollout", "undo", "deployment/web")
	waitRevision(t, ns, "5")
	if cause := mustKubectl(t, "-n", ns, "get", "deployment", "web", "-o", `jsonpath={.metadata.annotations.kubernetes\.io/change-cause}`); cause != "to busybox:3" {
		t.Errorf("change cause after undo to revision 3: %q", cause)
	}
	checkHistory(t, ns, [][]string{{"2", "<none>"}, {"4", "<none>"}, {"5", "to busybox:3"}})
	checkRevisionTemplate(t, ns, "5", "busybox:3")

	// Undoing to the current template changes nothing.
	if out := mustKubectl(t, "-n", ns, "rollout", "undo", "deployment/web", "--to-revision=5"); out != "deployment.apps/web skipped rollback (current template already matches revision 5)\n" {
		t.Errorf("undo to the current revision: got %q", out)
	}
}

// waitRevision waits until the Deployment controller has written the
// Deployment's revision annotation.
func waitRevision(t *testing.T, ns, want string) {
	t.Helper()
	deadline := time.Now().Add(eventTimeout)
	for {
		got := mustKubectl(t, "-n", ns, "get", "deployment", "web", "-o", `jsonpath={.metadata.annotations.deployment\.kubernetes\.io/revision}`)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("deployment revision: %q after %s, want %q", got, eventTimeout, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

var revisionRow = regexp.MustCompile(`^\d+\s`)

// checkHistory compares the rows of `kubectl rollout history`.
func checkHistory(t *testing.T, ns string, want [][]string) {
	t.Helper()
	out := mustKubectl(t, "-n", ns, "rollout", "history", "deployment/web")
	table := rows(out)
	if len(table) < 2 || !slices.Equal(table[0], []string{"deployment.apps/web"}) || !slices.Equal(table[1], []string{"REVISION", "CHANGE-CAUSE"}) {
		t.Fatalf("rollout history: unexpected header in %q", out)
	}
	var got [][]string
	for _, line := range strings.Split(out, "\n") {
		if revisionRow.MatchString(line) {
			got = append(got, columnSep.Split(strings.TrimSpace(line), -1))
		}
	}
	if !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("rollout history: got %q, want %q", got, want)
	}
}

// checkRevisionTemplate is `kubectl rollout history --revision=N`: the
// pod template of that revision.
func checkRevisionTemplate(t *testing.T, ns, revision, image string) {
	t.Helper()
	out := mustKubectl(t, "-n", ns, "rollout", "history", "deployment/web", "--revision="+revision)
	if !strings.HasPrefix(out, "deployment.apps/web with revision #"+revision+"\nPod Template:\n") {
		t.Errorf("rollout history --revision=%s: unexpected header in %q", revision, out)
	}
	if !regexp.MustCompile(`\n\s+Image:\s+` + regexp.QuoteMeta(image) + `\n`).MatchString(out) {
		t.Errorf("rollout history --revision=%s: no image %s in %q", revision, image, out)
	}
}
