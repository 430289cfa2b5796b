package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodeagent/nodeagent/pkg/controlplane/etcd"
	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
)

var (
	client  *kubernetes.Clientset
	baseURL string
	testSrv *Server
)

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestMain runs one API server on a real embedded etcd for every test.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "apiserver-test")
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	etcdPKI, err := pki.EnsureEtcd(filepath.Join(dir, "pki"), pki.Options{Hostname: "test", Logger: quiet})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	e, err := etcd.Start(ctx, etcd.Config{
		DataDir: filepath.Join(dir, "etcd"), ClientPort: freePort(), PeerPort: freePort(), Logger: quiet,
	}.WithPKI(etcdPKI))
	if err != nil {
		fmt.Println(err)
		return 1
	}
	defer e.Close()
	s, err := New(Config{Etcd: e.Client(), Logger: quiet, ServeHook: panicOnHeader})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	go func() { _ = s.Run(ctx) }()
	select {
	case <-s.Ready():
	case <-time.After(30 * time.Second):
		fmt.Println("API server not ready")
		return 1
	}
	testSrv = s
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	baseURL = srv.URL
	client = kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	if err := bootstrapPolicy(ctx, s, &rest.Config{Host: srv.URL}); err != nil {
		fmt.Println(err)
		return 1
	}
	return m.Run()
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func testNamespace(t *testing.T) string {
	t.Helper()
	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	created, err := client.CoreV1().Namespaces().Create(ctxT(t), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return created.Name
}

func testPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
	}
}

func TestSystemNamespacesAndDefaultServiceAccount(t *testing.T) {
	for _, ns := range systemNamespaces {
		if _, err := client.CoreV1().Namespaces().Get(ctxT(t), ns, metav1.GetOptions{}); err != nil {
			t.Errorf("namespace %s: %v", ns, err)
		}
	}
	ns := testNamespace(t)
	if _, err := client.CoreV1().ServiceAccounts(ns).Get(ctxT(t), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("default service account in a new namespace: %v", err)
	}
}

func TestPodCRUD(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	created, err := pods.Create(ctxT(t), testPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
		t.Errorf("server fields not set: %+v", created.ObjectMeta)
	}
	if created.Spec.RestartPolicy != v1.RestartPolicyAlways || created.Spec.Containers[0].ImagePullPolicy != v1.PullIfNotPresent {
		t.Errorf("defaults not applied: %+v", created.Spec)
	}
	if len(created.Spec.Tolerations) != 2 || created.Spec.ServiceAccountName != "default" {
		t.Errorf("admission did not add tolerations/service account: %+v %q", created.Spec.Tolerations, created.Spec.ServiceAccountName)
	}
	if _, err := pods.Create(ctxT(t), testPod("web"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Errorf("second create: %v, want AlreadyExists", err)
	}
	got, err := pods.Get(ctxT(t), "web", metav1.GetOptions{})
	if err != nil || got.UID != created.UID {
		t.Fatalf("get: %v %v", got, err)
	}
	// Optimistic concurrency: an update from a stale copy conflicts.
	got.Labels["v"] = "1"
	if _, err := pods.Update(ctxT(t), got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got.Labels["v"] = "2"
	if _, err := pods.Update(ctxT(t), got, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("stale update: %v, want Conflict", err)
	}
	// Unbound pods are deleted at once.
	if err := pods.Delete(ctxT(t), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.Get(ctxT(t), "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: %v, want NotFound", err)
	}
}

// The API server merges matchLabelKeys into the selectors of a created
// pod, as upstream (MatchLabelKeysInPodAffinity and
// MatchLabelKeysInPodTopologySpreadSelectorMerge), so that the scheduler
// needs nothing more; a key also in matchLabels is then refused.
func TestPodCreateMergesMatchLabelKeys(t *testing.T) {
	ns := testNamespace(t)
	pod := testPod("spread")
	pod.Labels = map[string]string{"app": "web", "pod-template-hash": "abc"}
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pod.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
		WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: sel, MatchLabelKeys: []string{"pod-template-hash"}}}
	pod.Spec.Affinity = &v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{
		{TopologyKey: "kubernetes.io/hostname", LabelSelector: sel.DeepCopy(), MismatchLabelKeys: []string{"pod-template-hash"}}}}}
	created, err := client.CoreV1().Pods(ns).Create(ctxT(t), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in := created.Spec.TopologySpreadConstraints[0].LabelSelector.MatchExpressions
	notIn := created.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].LabelSelector.MatchExpressions
	if len(in) != 1 || in[0].Key != "pod-template-hash" || in[0].Operator != metav1.LabelSelectorOpIn || in[0].Values[0] != "abc" {
		t.Errorf("spread selector expressions = %v", in)
	}
	if len(notIn) != 1 || notIn[0].Operator != metav1.LabelSelectorOpNotIn || notIn[0].Values[0] != "abc" {
		t.Errorf("anti-affinity selector expressions = %v", notIn)
	}

	dup := testPod("dup")
	dup.Labels = map[string]string{"app": "web"}
	dup.Spec.TopologySpreadConstraints = []v1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone",
		WhenUnsatisfiable: v1.DoNotSchedule, LabelSelector: sel.DeepCopy(), MatchLabelKeys: []string{"app"}}}
	_, err = client.CoreV1().Pods(ns).Create(ctxT(t), dup, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.topologySpreadConstraints[0][0]: Invalid value: \"app\": exists in both matchLabelKeys and labelSelector") {
		t.Errorf("key in both: %v", err)
	}
}

func TestInvalidPodAndMissingNamespace(t *testing.T) {
	ns := testNamespace(t)
	bad := testPod("Bad_Name")
	bad.Spec.Containers[0].Image = ""
	_, err := client.CoreV1().Pods(ns).Create(ctxT(t), bad, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("invalid pod: %v, want 422 Invalid", err)
	}
	msg := err.Error()
	for _, want := range []string{`Pod "Bad_Name" is invalid`, "metadata.name: Invalid value", "spec.containers[0].image: Required value"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	_, err = client.CoreV1().Pods("no-such-ns").Create(ctxT(t), testPod("p"), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `namespaces "no-such-ns" not found`) {
		t.Errorf("missing namespace: %v", err)
	}
}

func TestGenerateNameAndSelectors(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	for i := 0; i < 3; i++ {
		p := testPod("")
		p.GenerateName = "gen-"
		if i == 2 {
			p.Labels["app"] = "db"
			p.Spec.NodeName = "node-a"
		}
		created, err := pods.Create(ctxT(t), p, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(created.Name, "gen-") || len(created.Name) != len("gen-")+5 {
			t.Errorf("generated name %q", created.Name)
		}
	}
	byLabel, err := pods.List(ctxT(t), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(byLabel.Items) != 2 {
		t.Errorf("label selector: %d items, %v", len(byLabel.Items), err)
	}
	byNode, err := pods.List(ctxT(t), metav1.ListOptions{FieldSelector: "spec.nodeName=node-a"})
	if err != nil || len(byNode.Items) != 1 || byNode.Items[0].Labels["app"] != "db" {
		t.Errorf("field selector: %v, %v", byNode.Items, err)
	}
	if _, err := pods.List(ctxT(t), metav1.ListOptions{FieldSelector: "spec.bogus=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want 400", err)
	}
	page, err := pods.List(ctxT(t), metav1.ListOptions{Limit: 2})
	if err != nil || len(page.Items) != 2 || page.Continue == "" {
		t.Fatalf("first page: %d items, continue %q, %v", len(page.Items), page.Continue, err)
	}
	rest, err := pods.List(ctxT(t), metav1.ListOptions{Limit: 2, Continue: page.Continue})
	if err != nil || len(rest.Items) != 1 || rest.Continue != "" {
		t.Errorf("second page: %d items, continue %q, %v", len(rest.Items), rest.Continue, err)
	}
}

func TestPatchTypes(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctxT(t), testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patches := []struct {
		pt    types.PatchType
		patch string
		check func(*v1.Pod) bool
	}{
		{types.MergePatchType, `{"metadata":{"labels":{"merge":"yes"}}}`, func(p *v1.Pod) bool { return p.Labels["merge"] == "yes" && p.Labels["app"] == "web" }},
		{types.JSONPatchType, `[{"op":"add","path":"/metadata/annotations","value":{"json":"yes"}}]`, func(p *v1.Pod) bool { return p.Annotations["json"] == "yes" }},
		{types.StrategicMergePatchType, `{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}`, func(p *v1.Pod) bool {
			return len(p.Spec.Containers) == 1 && p.Spec.Containers[0].Image == "busybox:2"
		}},
	}
	for _, tc := range patches {
		got, err := pods.Patch(ctxT(t), "p", tc.pt, []byte(tc.patch), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("%s: %v", tc.pt, err)
			continue
		}
		if !tc.check(got) {
			t.Errorf("%s not applied: %+v", tc.pt, got)
		}
	}
	// Changing an immutable field is refused with upstream's message.
	_, err := pods.Patch(ctxT(t), "p", types.MergePatchType, []byte(`{"spec":{"restartPolicy":"Never"}}`), metav1.PatchOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
		t.Errorf("immutable field: %v", err)
	}
}

func TestWatchAndGracefulDeletion(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	list, err := pods.List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	p := testPod("bound")
	p.Spec.NodeName = "node-a"
	if _, err := pods.Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Added, func(p *v1.Pod) bool { return p.Name == "bound" })
	// A bound pod is only marked: its node deletes it with grace 0.
	if err := pods.Delete(ctxT(t), "bound", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked := expectEvent(t, w, watch.Modified, func(p *v1.Pod) bool { return p.DeletionTimestamp != nil })
	if g := marked.DeletionGracePeriodSeconds; g == nil || *g != 30 {
		t.Errorf("deletionGracePeriodSeconds %v, want 30", g)
	}
	zero := int64(0)
	if err := pods.Delete(ctxT(t), "bound", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Deleted, func(p *v1.Pod) bool { return p.Name == "bound" })
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, ok func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case ev, open := <-w.ResultChan():
			if !open {
				t.Fatalf("watch closed while waiting for %s", typ)
			}
			if p, isPod := ev.Object.(*v1.Pod); isPod && ev.Type == typ && ok(p) {
				return p
			}
		case <-timeout:
			t.Fatalf("no %s event", typ)
		}
	}
}

func TestBindingAndStatus(t *testing.T) {
	ns := testNamespace(t)
	pods := client.CoreV1().Pods(ns)
	if _, err := pods.Create(ctxT(t), testPod("p"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b := &v1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Target: v1.ObjectReference{Kind: "Node", Name: "node-a"}}
	if err := pods.Bind(ctxT(t), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := pods.Bind(ctxT(t), b, metav1.CreateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("second binding: %v, want Conflict", err)
	}
	got, _ := pods.Get(ctxT(t), "p", metav1.GetOptions{})
	if got.Spec.NodeName != "node-a" {
		t.Fatalf("nodeName %q after binding", got.Spec.NodeName)
	}
	got.Status.Phase = v1.PodRunning
	got.Spec.ActiveDeadlineSeconds = nil
	updated, err := pods.UpdateStatus(ctxT(t), got, metav1.UpdateOptions{})
	if err != nil || updated.Status.Phase != v1.PodRunning {
		t.Fatalf("status update: %v %v", updated, err)
	}
	// The main resource ignores status changes.
	updated.Status.Phase = v1.PodFailed
	updated.Labels["x"] = "y"
	again, err := pods.Update(ctxT(t), updated, metav1.UpdateOptions{})
	if err != nil || again.Status.Phase != v1.PodRunning || again.Labels["x"] != "y" {
		t.Errorf("update through the main resource changed status or lost labels: %v %v", again.Status.Phase, err)
	}
}

func TestDeploymentScale(t *testing.T) {
	ns := testNamespace(t)
	two := int32(2)
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &two,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox:1"}}},
			},
		},
	}
	if _, err := client.AppsV1().Deployments(ns).Create(ctxT(t), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := client.AppsV1().Deployments(ns).GetScale(ctxT(t), "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 2 {
		t.Fatalf("get scale: %v %v", sc, err)
	}
	sc.Spec.Replicas = 5
	if _, err := client.AppsV1().Deployments(ns).UpdateScale(ctxT(t), "web", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, _ := client.AppsV1().Deployments(ns).Get(ctxT(t), "web", metav1.GetOptions{})
	if *got.Spec.Replicas != 5 {
		t.Errorf("replicas %d after scale, want 5", *got.Spec.Replicas)
	}
}

func TestDiscoveryAndTables(t *testing.T) {
	_, lists, err := client.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, l := range lists {
		for _, r := range l.APIResources {
			found[l.GroupVersion+"/"+r.Name] = true
		}
	}
	for _, want := range []string{"v1/pods", "v1/pods/status", "v1/namespaces", "apps/v1/deployments", "apps/v1/deployments/scale", "coordination.k8s.io/v1/leases"} {
		if !found[want] {
			t.Errorf("discovery lacks %s", want)
		}
	}
	req, _ := http.NewRequest(http.MethodGet, baseURL+"/api/v1/namespaces", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var table metav1.Table
	if err := json.NewDecoder(resp.Body).Decode(&table); err != nil {
		t.Fatal(err)
	}
	if table.Kind != "Table" || len(table.ColumnDefinitions) == 0 || table.ColumnDefinitions[0].Name != "Name" || len(table.Rows) < 4 {
		t.Errorf("namespace table: kind %q, %d columns, %d rows", table.Kind, len(table.ColumnDefinitions), len(table.Rows))
	}
}

func TestNamespaceDeletionEmptiesIt(t *testing.T) {
	ns := testNamespace(t)
	if _, err := client.CoreV1().ConfigMaps(ns).Create(ctxT(t), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := client.CoreV1().Namespaces().Delete(ctxT(t), ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := client.CoreV1().Namespaces().Get(ctxT(t), ns, metav1.GetOptions{})
	if err == nil && got.Status.Phase != v1.NamespaceTerminating {
		t.Errorf("phase %s right after delete, want Terminating", got.Status.Phase)
	}
	_, err = client.CoreV1().ConfigMaps(ns).Create(ctxT(t), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) && !apierrors.IsNotFound(err) {
		t.Errorf("create in a terminating namespace: %v, want Forbidden", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := client.CoreV1().Namespaces().Get(ctxT(t), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s still there: %v", ns, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func TestServiceClusterIPAllocation(t *testing.T) {
	ns := testNamespace(t)
	k, err := client.CoreV1().Services("default").Get(ctxT(t), "kubernetes", metav1.GetOptions{})
	if err != nil || k.Spec.ClusterIP != "10.96.0.1" {
		t.Fatalf("kubernetes service: %v %v", k, err)
	}
	seen := map[string]bool{k.Spec.ClusterIP: true}
	for i := 0; i < 3; i++ {
		svc := &v1.Service{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "svc-"},
			Spec: v1.ServiceSpec{Type: v1.ServiceTypeNodePort, Selector: map[string]string{"app": "web"},
				Ports: []v1.ServicePort{{Port: 80}}},
		}
		got, err := client.CoreV1().Services(ns).Create(ctxT(t), svc, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := got.Spec.ClusterIP
		if seen[ip] || !strings.HasPrefix(ip, "10.") || got.Spec.Ports[0].NodePort < 30000 {
			t.Errorf("allocated %s (seen %v) nodePort %d", ip, seen, got.Spec.Ports[0].NodePort)
		}
		seen[ip] = true
	}
	taken := &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "taken"},
		Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Port: 80}}}}
	if _, err := client.CoreV1().Services(ns).Create(ctxT(t), taken, metav1.CreateOptions{}); !apierrors.IsInvalid(err) ||
		!strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Errorf("taken cluster IP: %v", err)
	}
}

func TestDeletePropagationBecomesAFinalizer(t *testing.T) {
	ns := testNamespace(t)
	cms := client.CoreV1().ConfigMaps(ns)
	for _, tc := range []struct {
		policy metav1.DeletionPropagation
		want   string
	}{
		{metav1.DeletePropagationForeground, metav1.FinalizerDeleteDependents},
		{metav1.DeletePropagationOrphan, metav1.FinalizerOrphanDependents},
	} {
		name := strings.ToLower(string(tc.policy))
		if _, err := cms.Create(ctxT(t), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		policy := tc.policy
		if err := cms.Delete(ctxT(t), name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
			t.Fatal(err)
		}
		got, err := cms.Get(ctxT(t), name, metav1.GetOptions{})
		if err != nil || got.DeletionTimestamp == nil || len(got.Finalizers) != 1 || got.Finalizers[0] != tc.want {
			t.Fatalf("%s: %v %v, want marked with %s", tc.policy, got, err, tc.want)
		}
		// Removing the finalizer (the garbage collector's job) completes the deletion.
		got.Finalizers = nil
		if _, err := cms.Update(ctxT(t), got, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := cms.Get(ctxT(t), name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s: still there after the finalizer went: %v", tc.policy, err)
		}
	}
	background := metav1.DeletePropagationBackground
	if _, err := cms.Create(ctxT(t), &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "bg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cms.Delete(ctxT(t), "bg", metav1.DeleteOptions{PropagationPolicy: &background}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctxT(t), "bg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("background deletion left the object: %v", err)
	}
}
