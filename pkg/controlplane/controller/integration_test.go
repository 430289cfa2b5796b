package controller_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startControlPlane runs the real server, which runs the controllers.
func startControlPlane(t *testing.T) kubernetes.Interface {
	t.Helper()
	return kubernetes.NewForConfigOrDie(startControlPlaneConfig(t))
}

// startControlPlaneConfig runs the real server and returns the admin's
// client configuration (its CAData is the cluster CA).
func startControlPlaneConfig(t *testing.T) *rest.Config {
	t.Helper()
	dir := t.TempDir()
	log := slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelInfo}))
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- server.Run(ctx, server.Config{DataDir: dir, SecurePort: freePort(t), BindAddress: "127.0.0.1",
			EtcdClientPort: freePort(t), EtcdPeerPort: freePort(t), DisableAgent: true, Logger: log, Ready: ready})
	}()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		t.Fatalf("server: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("server not ready after 60s")
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, server.KubeconfigFile))
	if err != nil {
		t.Fatal(err)
	}
	rc.QPS, rc.Burst = 200, 400
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("server.Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("server did not stop")
		}
	})
	return rc
}

// eventually polls cond until it holds; it fails with the last state.
func eventually(t *testing.T, what string, cond func(ctx context.Context) (bool, string, error)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		ok, state, err := cond(ctx)
		last = state
		return ok, err
	})
	if err != nil {
		t.Fatalf("%s: %v; last state: %s", what, err, last)
	}
}

type snapshot struct {
	rss  []appsv1.ReplicaSet
	pods []v1.Pod
}

func (s snapshot) String() string {
	out := ""
	for _, rs := range s.rss {
		out += fmt.Sprintf("rs %s spec=%d status=%d; ", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas)
	}
	return out + fmt.Sprintf("%d pods", len(s.pods))
}

func list(ctx context.Context, c kubernetes.Interface, ns string) (snapshot, error) {
	rss, err := c.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return snapshot{}, err
	}
	pods, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return snapshot{}, err
	}
	var active []v1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			active = append(active, p)
		}
	}
	return snapshot{rss.Items, active}, nil
}

func isController(refs []metav1.OwnerReference, kind, name string, uid any) bool {
	return len(refs) == 1 && refs[0].Kind == kind && refs[0].Name == name && any(refs[0].UID) == uid &&
		refs[0].Controller != nil && *refs[0].Controller && refs[0].BlockOwnerDeletion != nil && *refs[0].BlockOwnerDeletion
}

// TestDeploymentLifecycle drives a Deployment through the real API server:
// create, scale down, roll out a new image (which stalls without ready
// pods, as upstream's), delete (the garbage collector cascades).
func TestDeploymentLifecycle(t *testing.T) {
	client := startControlPlane(t)
	ctx := t.Context()
	const ns = "default"
	replicas := int32(3)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "web", Image: "nginx:1"}}},
			},
		},
	}
	d, err := client.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// 1. One ReplicaSet owned by the Deployment, three pods owned by it.
	var firstRS appsv1.ReplicaSet
	var s0 snapshot
	eventually(t, "3 pods of 1 replica set", func(ctx context.Context) (bool, string, error) {
		s, err := list(ctx, client, ns)
		if err != nil || len(s.rss) != 1 || len(s.pods) != 3 {
			return false, s.String(), err
		}
		rs := s.rss[0]
		if !isController(rs.OwnerReferences, "Deployment", "web", d.UID) {
			return false, fmt.Sprintf("rs owners %+v", rs.OwnerReferences), nil
		}
		hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || rs.Name != "web-"+hash || rs.Annotations["deployment.kubernetes.io/revision"] != "1" {
			return false, fmt.Sprintf("rs %s labels %v annotations %v", rs.Name, rs.Labels, rs.Annotations), nil
		}
		for _, p := range s.pods {
			if !isController(p.OwnerReferences, "ReplicaSet", rs.Name, rs.UID) || p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash {
				return false, fmt.Sprintf("pod %s owners %+v", p.Name, p.OwnerReferences), nil
			}
		}
		firstRS, s0 = rs, s
		return true, "", nil
	})
	eventually(t, "controller events", func(ctx context.Context) (bool, string, error) {
		evs, err := client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		var got []string
		for _, e := range evs.Items {
			got = append(got, fmt.Sprintf("%s/%s %s %s: %s [%s]", e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Type, e.Reason, e.Message, e.Source.Component))
		}
		want := []string{"Deployment/web Normal ScalingReplicaSet: Scaled up replica set " + firstRS.Name + " from 0 to 3 [deployment-controller]"}
		for _, p := range s0.pods {
			want = append(want, "ReplicaSet/"+firstRS.Name+" Normal SuccessfulCreate: Created pod: "+p.Name+" [replicaset-controller]")
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false, fmt.Sprintf("no %q in %q", w, got), nil
			}
		}
		return true, "", nil
	})
	eventually(t, "deployment status", func(ctx context.Context) (bool, string, error) {
		cur, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := cur.Status
		// No agent: pods never become ready, so 3 are unavailable.
		return st.ObservedGeneration == cur.Generation && st.Replicas == 3 && st.UpdatedReplicas == 3 &&
			st.UnavailableReplicas == 3 && st.AvailableReplicas == 0, fmt.Sprintf("%+v", st), nil
	})

	// 2. Scale to 1 through the scale subresource: two pods go.
	scale, err := client.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "scaled to 1", func(ctx context.Context) (bool, string, error) {
		s, err := list(ctx, client, ns)
		return err == nil && len(s.rss) == 1 && *s.rss[0].Spec.Replicas == 1 && len(s.pods) == 1, s.String(), err
	})

	// 3. A new image: a second ReplicaSet. With 1 replica maxSurge is 1 and
	// maxUnavailable 0, so the new ReplicaSet gets 1 pod and the old one
	// keeps its pod until the new one is available, which never happens.
	// Retried: the controller writes the Deployment (its revision
	// annotation) too.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cur.Spec.Template.Spec.Containers[0].Image = "nginx:2"
		_, err = client.AppsV1().Deployments(ns).Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "rollout stalled at maxUnavailable 0", func(ctx context.Context) (bool, string, error) {
		s, err := list(ctx, client, ns)
		if err != nil || len(s.rss) != 2 || len(s.pods) != 2 {
			return false, s.String(), err
		}
		for _, rs := range s.rss {
			if *rs.Spec.Replicas != 1 {
				return false, s.String(), nil
			}
			if rs.UID != firstRS.UID && rs.Annotations["deployment.kubernetes.io/revision"] != "2" {
				return false, fmt.Sprintf("new rs annotations %v", rs.Annotations), nil
			}
		}
		d, err := client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		st := d.Status
		var progressing string
		for _, c := range st.Conditions {
			if c.Type == appsv1.DeploymentProgressing {
				progressing = c.Reason
			}
		}
		return st.ObservedGeneration == d.Generation && st.Replicas == 2 && st.UpdatedReplicas == 1 &&
			progressing == "ReplicaSetUpdated", fmt.Sprintf("%+v", st), nil
	})

	// 4. Delete the Deployment (background propagation): the garbage
	// collector removes its ReplicaSets, then their pods.
	if err := client.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "cascading deletion", func(ctx context.Context) (bool, string, error) {
		s, err := list(ctx, client, ns)
		return err == nil && len(s.rss) == 0 && len(s.pods) == 0, s.String(), err
	})
}

// TestNodeIPAM: nodes registered without a pod CIDR get distinct blocks of
// the default cluster CIDR; a node that brings its own keeps it.
func TestNodeIPAM(t *testing.T) {
	client := startControlPlane(t)
	ctx := t.Context()
	mk := func(name, cidr string) {
		n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if cidr != "" {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidr, []string{cidr}
		}
		if _, err := client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("preset", "10.244.0.0/24")
	mk("a", "")
	mk("b", "")
	eventually(t, "pod CIDRs", func(ctx context.Context) (bool, string, error) {
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, "", err
		}
		got := map[string]string{}
		seen := map[string]bool{}
		for _, n := range nodes.Items {
			if len(n.Spec.PodCIDRs) != 1 || n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
				return false, fmt.Sprintf("node %s: %q %v", n.Name, n.Spec.PodCIDR, n.Spec.PodCIDRs), nil
			}
			got[n.Name] = n.Spec.PodCIDR
			seen[n.Spec.PodCIDR] = true
		}
		state := fmt.Sprint(got)
		if len(got) != 3 || len(seen) != 3 || got["preset"] != "10.244.0.0/24" {
			return false, state, nil
		}
		for _, name := range []string{"a", "b"} {
			if !strings.HasPrefix(got[name], "10.244.") || !strings.HasSuffix(got[name], ".0/24") {
				return false, state, nil
			}
		}
		return true, state, nil
	})
}

// TestReplicaSetAdoption: an orphan that matches is adopted and one that
// stops matching is released, through ownerReferences patches on the real
// API server.
func TestReplicaSetAdoption(t *testing.T) {
	client := startControlPlane(t)
	ctx := t.Context()
	const ns = "default"
	labels := map[string]string{"app": "db"}
	orphan := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan", Namespace: ns, Labels: labels},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "db", Image: "pg:1"}}}}
	if _, err := client.CoreV1().Pods(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: orphan.Spec}}}
	rs, err := client.AppsV1().ReplicaSets(ns).Create(ctx, rs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "orphan adopted, no pod created", func(ctx context.Context) (bool, string, error) {
		s, err := list(ctx, client, ns)
		if err != nil || len(s.pods) != 1 {
			return false, s.String(), err
		}
		p := s.pods[0]
		return p.Name == "orphan" && isController(p.OwnerReferences, "ReplicaSet", "db", rs.UID), fmt.Sprintf("%s owners %+v", p.Name, p.OwnerReferences), nil
	})
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Labels = map[string]string{"app": "debug"}
		_, err = client.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "released and replaced", func(ctx context.Context) (bool, string, error) {
		p, err := client.CoreV1().Pods(ns).Get(ctx, "orphan", metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		s, err := list(ctx, client, ns)
		return len(p.OwnerReferences) == 0 && len(s.pods) == 2, fmt.Sprintf("owners %+v; %s", p.OwnerReferences, s), err
	})
}
