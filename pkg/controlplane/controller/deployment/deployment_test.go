package deployment

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/internal/ctrltest"
	"github.com/nodeagent/nodeagent/pkg/controlplane/controller/replicaset"
)

func TestResolveFenceposts(t *testing.T) {
	for _, tc := range []struct {
		replicas              int32
		surge, unavail        intstr.IntOrString
		wantSurge, wantUnavai int32
	}{
		{10, intstr.FromString("25%"), intstr.FromString("25%"), 3, 2},
		{1, intstr.FromString("25%"), intstr.FromString("25%"), 1, 0},
		{3, intstr.FromInt32(0), intstr.FromInt32(0), 0, 1},
		{4, intstr.FromInt32(2), intstr.FromString("50%"), 2, 2},
	} {
		r := tc.replicas
		d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: &r, Strategy: appsv1.DeploymentStrategy{
			Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &tc.surge, MaxUnavailable: &tc.unavail}}}}
		if s, u := maxSurge(d), maxUnavailable(d); s != tc.wantSurge || u != tc.wantUnavai {
			t.Errorf("replicas %d surge %v unavailable %v: got %d/%d, want %d/%d", r, tc.surge.String(), tc.unavail.String(), s, u, tc.wantSurge, tc.wantUnavai)
		}
	}
}

// TestComputeHashStable pins the hash: a change would roll every
// Deployment on upgrade.
func TestComputeHashStable(t *testing.T) {
	tmpl := v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx"}}}}
	h := ComputeHash(&tmpl, nil)
	if h != ComputeHash(tmpl.DeepCopy(), nil) || len(h) == 0 {
		t.Fatalf("hash not deterministic: %q", h)
	}
	one := int32(1)
	if ComputeHash(&tmpl, &one) == h {
		t.Fatal("collisionCount does not change the hash")
	}
}

// kubelet marks every pod Running and Ready, as a node agent would.
func kubelet(ctx context.Context, client kubernetes.Interface) {
	l, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	for _, p := range l.Items {
		if p.Status.Phase == v1.PodRunning {
			continue
		}
		p.Spec.NodeName = "n1"
		p.Status.Phase = v1.PodRunning
		p.Status.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}}
		_, _ = client.CoreV1().Pods("default").UpdateStatus(ctx, &p, metav1.UpdateOptions{})
	}
}

// updateDeployment changes a Deployment's spec as a user would, retrying
// on conflicts with the controller's status writes, and bumps the
// generation as the API server does.
func updateDeployment(t *testing.T, client kubernetes.Interface, name string, change func(*appsv1.Deployment)) *appsv1.Deployment {
	t.Helper()
	var out *appsv1.Deployment
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.AppsV1().Deployments("default").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(cur)
		cur.Generation++
		out, err = client.AppsV1().Deployments("default").Update(t.Context(), cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func progressing(d *appsv1.Deployment) string {
	if c := getCondition(d.Status, appsv1.DeploymentProgressing); c != nil {
		return c.Reason
	}
	return ""
}

// TestRollingUpdateScenario runs the Deployment and ReplicaSet controllers
// with a stand-in kubelet: the first rollout completes, then a new image
// replaces the old ReplicaSet, which is kept scaled to zero.
func TestRollingUpdateScenario(t *testing.T) {
	replicas, deadline, history := int32(4), int32(600), int32(10)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{
			Replicas:                &replicas,
			ProgressDeadlineSeconds: &deadline,
			RevisionHistoryLimit:    &history,
			Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Strategy:                appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1"}}},
			},
		},
	}
	client := ctrltest.NewClientset(d)
	f := informers.NewSharedInformerFactory(client, 0)
	dc := New(client, f, ctrltest.Logger(t).With("c", "deployment"))
	rc := replicaset.New(client, f, ctrltest.Logger(t).With("c", "replicaset"))
	ctrltest.Start(t, f, func(ctx context.Context) error { return dc.Run(ctx, 1) }, func(ctx context.Context) error { return rc.Run(ctx, 1) })

	complete := func(image string) func(ctx context.Context) (bool, string) {
		return func(ctx context.Context) (bool, string) {
			kubelet(ctx, client)
			cur, _ := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
			st := cur.Status
			avail := getCondition(st, appsv1.DeploymentAvailable)
			ok := st.ObservedGeneration == cur.Generation && st.Replicas == 4 && st.UpdatedReplicas == 4 && st.AvailableReplicas == 4 && st.UnavailableReplicas == 0 &&
				progressing(cur) == NewRSAvailableReason && avail != nil && avail.Reason == MinimumReplicasAvailable &&
				cur.Spec.Template.Spec.Containers[0].Image == image
			return ok, fmt.Sprintf("%+v", st)
		}
	}
	ctrltest.Eventually(t, "first rollout complete", complete("nginx:1"))
	hash := ComputeHash(&d.Spec.Template, nil)
	rs1, err := client.AppsV1().ReplicaSets("default").Get(t.Context(), "web-"+hash, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("replica set named by the template hash: %v", err)
	}
	if rs1.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs1.Annotations[RevisionAnnotation] != "1" ||
		rs1.Annotations[DesiredReplicasAnnotation] != "4" || rs1.Annotations[MaxReplicasAnnotation] != "5" {
		t.Fatalf("replica set %s: selector %v annotations %v", rs1.Name, rs1.Spec.Selector, rs1.Annotations)
	}

	cur := updateDeployment(t, client, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	})
	ctrltest.Eventually(t, "second rollout complete", complete("nginx:2"))
	ctrltest.Eventually(t, "old replica set scaled to zero", func(ctx context.Context) (bool, string) {
		kubelet(ctx, client)
		old, _ := client.AppsV1().ReplicaSets("default").Get(ctx, rs1.Name, metav1.GetOptions{})
		cur, _ := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		l, _ := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		state := fmt.Sprintf("revision %q status %+v", cur.Annotations[RevisionAnnotation], cur.Status)
		for _, rs := range l.Items {
			state += fmt.Sprintf("; %s spec %d status %+v", rs.Name, *rs.Spec.Replicas, rs.Status)
		}
		return *old.Spec.Replicas == 0 && cur.Annotations[RevisionAnnotation] == "2", state
	})
	rs2Name := "web-" + ComputeHash(&cur.Spec.Template, nil)
	ctrltest.Eventually(t, "ScalingReplicaSet events", func(ctx context.Context) (bool, string) {
		ev := ctrltest.Events(ctx, client, "default")
		const prefix, source = "Deployment web Normal ScalingReplicaSet: ", " [deployment-controller]"
		// The steps in between depend on when pods turn ready.
		for _, want := range []string{
			"Scaled up replica set " + rs1.Name + " from 0 to 4",
			"Scaled up replica set " + rs2Name + " from 0 to 1",
			"Scaled down replica set " + rs1.Name + " from 4 to 3",
		} {
			if !slices.Contains(ev, prefix+want+source) {
				return false, fmt.Sprintf("no %q in %q", want, ev)
			}
		}
		// Beyond 10 similar events the recorder aggregates, as upstream's.
		last := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + `(\(combined from similar events\): )?` +
			regexp.QuoteMeta("Scaled down replica set "+rs1.Name+" from ") + `\d+ to 0` + regexp.QuoteMeta(source) + "$")
		return slices.ContainsFunc(ev, last.MatchString), fmt.Sprintf("no scale-down to 0 in %q", ev)
	})

	// Back to the first template, with a change cause: the first
	// ReplicaSet is reused as revision 3 and remembers revision 1; the
	// deployment's annotations are copied but for last-applied.
	updateDeployment(t, client, "web", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "nginx:1"
		d.Annotations["kubernetes.io/change-cause"] = "back to 1"
		d.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
	})
	ctrltest.Eventually(t, "third rollout complete", complete("nginx:1"))
	ctrltest.Eventually(t, "first replica set reused as revision 3", func(ctx context.Context) (bool, string) {
		rs, _ := client.AppsV1().ReplicaSets("default").Get(ctx, rs1.Name, metav1.GetOptions{})
		l, _ := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		d, _ := client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		a := rs.Annotations
		_, lastApplied := a["kubectl.kubernetes.io/last-applied-configuration"]
		return len(l.Items) == 2 && a[RevisionAnnotation] == "3" && a[RevisionHistoryAnnotation] == "1" &&
				a["kubernetes.io/change-cause"] == "back to 1" && !lastApplied && d.Annotations[RevisionAnnotation] == "3",
			fmt.Sprintf("%d replica sets; %s annotations %v; deployment revision %q", len(l.Items), rs.Name, a, d.Annotations[RevisionAnnotation])
	})
}

func TestAppendRevisionHistory(t *testing.T) {
	if got := appendRevisionHistory("", "1"); got != "1" {
		t.Errorf("first entry: %q", got)
	}
	if got := appendRevisionHistory("1,3", "5"); got != "1,3,5" {
		t.Errorf("append: %q", got)
	}
	long := strings.Repeat("9", maxRevisionHistoryChars-3)
	if got := appendRevisionHistory("1,"+long, "12"); got != long+",12" {
		t.Errorf("oldest entries go beyond %d chars: got %d chars", maxRevisionHistoryChars, len(got))
	}
}

// TestRecreateScenario: Recreate scales the old ReplicaSet to zero before
// the new one is created.
func TestRecreateScenario(t *testing.T) {
	replicas := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "default", UID: "d-uid"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "pg:1"}}},
			},
		},
	}
	client := ctrltest.NewClientset(d)
	f := informers.NewSharedInformerFactory(client, 0)
	dc := New(client, f, ctrltest.Logger(t))
	rc := replicaset.New(client, f, ctrltest.Logger(t))
	ctrltest.Start(t, f, func(ctx context.Context) error { return dc.Run(ctx, 1) }, func(ctx context.Context) error { return rc.Run(ctx, 1) })
	ctrltest.Eventually(t, "2 pods", func(ctx context.Context) (bool, string) {
		l, _ := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		return len(l.Items) == 2, fmt.Sprint(len(l.Items))
	})
	updateDeployment(t, client, "db", func(d *appsv1.Deployment) {
		d.Spec.Template.Spec.Containers[0].Image = "pg:2"
	})
	ctrltest.Eventually(t, "new replica set at full size, old at zero", func(ctx context.Context) (bool, string) {
		l, _ := client.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
		state := ""
		ok := len(l.Items) == 2
		for _, rs := range l.Items {
			state += fmt.Sprintf("%s=%d ", rs.Spec.Template.Spec.Containers[0].Image, *rs.Spec.Replicas)
			want := int32(0)
			if rs.Spec.Template.Spec.Containers[0].Image == "pg:2" {
				want = 2
			}
			ok = ok && *rs.Spec.Replicas == want
		}
		return ok, state
	})
}
