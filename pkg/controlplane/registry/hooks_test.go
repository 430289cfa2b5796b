package registry

import (
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func newDeployment() *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		ObjectMeta: meta("web"),
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: v1.PodSpec{Containers: []v1.Container{{
					Name: "web", Image: "nginx:1.27",
					Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}},
				}}},
			},
		},
	}
}

// create runs the create path: Default, PrepareForCreate, Validate.
func create(r *Resource, obj runtime.Object) []string {
	if r.Default != nil {
		r.Default(obj)
	}
	if r.PrepareForCreate != nil {
		r.PrepareForCreate(obj)
	}
	return errorFields(r.Validate(obj))
}

func TestDeploymentDefaults(t *testing.T) {
	d := newDeployment()
	deployments.Default(d)
	spec := d.Spec
	pct := intstr.FromString("25%")
	if *spec.Replicas != 1 || spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType ||
		*spec.Strategy.RollingUpdate.MaxUnavailable != pct || *spec.Strategy.RollingUpdate.MaxSurge != pct ||
		*spec.RevisionHistoryLimit != 10 || *spec.ProgressDeadlineSeconds != 600 {
		t.Errorf("deployment defaults: %+v", spec)
	}
	c := spec.Template.Spec.Containers[0]
	if spec.Template.Spec.RestartPolicy != v1.RestartPolicyAlways || spec.Template.Spec.DNSPolicy != v1.DNSClusterFirst ||
		c.ImagePullPolicy != v1.PullIfNotPresent || c.TerminationMessagePath != v1.TerminationMessagePathDefault {
		t.Errorf("template defaults: %+v", spec.Template.Spec)
	}
	if c.Resources.Requests != nil {
		t.Errorf("template requests defaulted from limits: %v", c.Resources.Requests)
	}
	if errs := create(deployments, d); errs != nil {
		t.Errorf("defaulted deployment invalid: %v", errs)
	}
	if d.Generation != 1 {
		t.Errorf("generation = %d, want 1", d.Generation)
	}
}

func TestServiceDefaults(t *testing.T) {
	s := &v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{
		Selector: map[string]string{"app": "web"},
		Ports:    []v1.ServicePort{{Name: "http", Port: 80}, {Name: "metrics", Port: 9090, TargetPort: intstr.FromString("metrics")}},
	}}
	services.Default(s)
	if s.Spec.Type != v1.ServiceTypeClusterIP || s.Spec.SessionAffinity != v1.ServiceAffinityNone ||
		*s.Spec.InternalTrafficPolicy != v1.ServiceInternalTrafficPolicyCluster || s.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("service defaults: %+v", s.Spec)
	}
	want := []v1.ServicePort{
		{Name: "http", Port: 80, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromInt32(80)},
		{Name: "metrics", Port: 9090, Protocol: v1.ProtocolTCP, TargetPort: intstr.FromString("metrics")},
	}
	if !reflect.DeepEqual(s.Spec.Ports, want) {
		t.Errorf("ports = %+v", s.Spec.Ports)
	}
	if errs := create(services, s); errs != nil {
		t.Errorf("defaulted service invalid: %v", errs)
	}

	lb := &v1.Service{ObjectMeta: meta("lb"), Spec: v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, Ports: []v1.ServicePort{{Port: 443}}}}
	services.Default(lb)
	if lb.Spec.ExternalTrafficPolicy != v1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts {
		t.Errorf("load balancer defaults: %+v", lb.Spec)
	}
}

func TestValidation(t *testing.T) {
	mismatch := newDeployment()
	mismatch.Spec.Template.Labels = map[string]string{"app": "other"}

	negative := newDeployment()
	negative.Spec.Replicas = new(int32)
	*negative.Spec.Replicas = -1

	badKey := &v1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"ok.key": "1", "bad/key": "2"}}
	tooBig := &v1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": strings.Repeat("x", v1.MaxSecretSize+1)}}

	dupPorts := &v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{{Name: "http", Port: 80}, {Name: "http", Port: 81}},
	}}
	unnamed := &v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{
		Ports: []v1.ServicePort{{Name: "http", Port: 80}, {Port: 81}},
	}}
	noImage := &v1.Pod{ObjectMeta: meta("p"), Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c"}}}}
	badNs := &v1.Event{ObjectMeta: meta("e"), InvolvedObject: v1.ObjectReference{Kind: "Pod", Name: "p", Namespace: "other"}}

	tests := []struct {
		name string
		r    *Resource
		obj  runtime.Object
		want []string
	}{
		{"deployment selector mismatch", deployments, mismatch, []string{"FieldValueInvalid spec.template.metadata.labels"}},
		{"deployment negative replicas", deployments, negative, []string{"FieldValueInvalid spec.replicas"}},
		{"configmap bad key", configMaps, badKey, []string{"FieldValueInvalid data[bad/key]"}},
		{"configmap too big", configMaps, tooBig, []string{"FieldValueTooLong []"}},
		{"service duplicate port names", services, dupPorts, []string{"FieldValueDuplicate spec.ports[1].name"}},
		{"service unnamed port", services, unnamed, []string{"FieldValueRequired spec.ports[1].name"}},
		{"pod without image", pods, noImage, []string{"FieldValueRequired spec.containers[0].image"}},
		{"event namespace mismatch", coreEvents, badNs, []string{"FieldValueInvalid involvedObject.namespace"}},
	}
	for _, tc := range tests {
		expectErrors(t, tc.name, toList(tc.r, tc.obj), tc.want...)
	}

	// A deployment's template errors carry the template's path.
	bad := newDeployment()
	bad.Spec.Template.Spec.Containers[0].Image = ""
	bad.Spec.Template.Spec.RestartPolicy = v1.RestartPolicyNever
	expectErrors(t, "template", toList(deployments, bad),
		"FieldValueRequired spec.template.spec.containers[0].image", "FieldValueNotSupported spec.template.spec.restartPolicy")

	// Selectors and cluster IPs are immutable; immutable configmaps stay put.
	old := newDeployment()
	create(deployments, old)
	changed := old.DeepCopy()
	changed.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "x"}}
	changed.Spec.Template.Labels = changed.Spec.Selector.MatchLabels
	expectErrors(t, "selector update", deployments.ValidateUpdate(changed, old), "FieldValueInvalid spec.selector")

	svc := &v1.Service{ObjectMeta: meta("web"), Spec: v1.ServiceSpec{ClusterIP: "10.0.0.10", Ports: []v1.ServicePort{{Port: 80}}}}
	create(services, svc)
	moved := svc.DeepCopy()
	moved.Spec.ClusterIP, moved.Spec.ClusterIPs = "10.0.0.11", []string{"10.0.0.11"}
	expectErrors(t, "clusterIP update", services.ValidateUpdate(moved, svc), "FieldValueInvalid spec.clusterIPs[0]")
	omitted := svc.DeepCopy()
	omitted.Spec.ClusterIP, omitted.Spec.ClusterIPs = "", nil
	services.PrepareForUpdate(omitted, svc)
	expectErrors(t, "clusterIP omitted on update", services.ValidateUpdate(omitted, svc))

	yes := true
	frozen := &v1.ConfigMap{ObjectMeta: meta("cfg"), Data: map[string]string{"a": "1"}, Immutable: &yes}
	thawed := frozen.DeepCopy()
	thawed.Data["a"] = "2"
	expectErrors(t, "immutable configmap", configMaps.ValidateUpdate(thawed, frozen), "FieldValueForbidden data")
}

// toList defaults obj, then validates it, as a create does.
func toList(r *Resource, obj runtime.Object) field.ErrorList {
	if r.Default != nil {
		r.Default(obj)
	}
	return r.Validate(obj)
}

func TestPrepareForUpdate(t *testing.T) {
	old := newDeployment()
	create(deployments, old)
	old.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: 1}

	same := old.DeepCopy()
	same.Status = appsv1.DeploymentStatus{}
	same.Labels = map[string]string{"new": "label"}
	deployments.PrepareForUpdate(same, old)
	if same.Generation != 1 || same.Status.Replicas != 1 {
		t.Errorf("metadata-only update: generation %d status %+v", same.Generation, same.Status)
	}

	scaled := old.DeepCopy()
	*scaled.Spec.Replicas = 3
	scaled.Status = appsv1.DeploymentStatus{}
	deployments.PrepareForUpdate(scaled, old)
	if scaled.Generation != 2 || scaled.Status.Replicas != 1 {
		t.Errorf("spec update: generation %d status %+v", scaled.Generation, scaled.Status)
	}

	status := old.DeepCopy()
	*status.Spec.Replicas = 5
	status.Status.AvailableReplicas = 1
	deployments.PrepareForStatusUpdate(status, old)
	if *status.Spec.Replicas != 1 || status.Status.AvailableReplicas != 1 {
		t.Errorf("status update: spec %d status %+v", *status.Spec.Replicas, status.Status)
	}
	expectErrors(t, "deployment status", deployments.ValidateStatusUpdate(status, old))
	status.Status.AvailableReplicas = 2
	expectErrors(t, "deployment status", deployments.ValidateStatusUpdate(status, old),
		"FieldValueInvalid status.availableReplicas", "FieldValueInvalid status.availableReplicas")

	pod := &v1.Pod{ObjectMeta: meta("p"), Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if errs := create(pods, pod); errs != nil {
		t.Fatal(errs)
	}
	if pod.Status.Phase != v1.PodPending || pod.Status.QOSClass != v1.PodQOSBestEffort || pod.Generation != 1 {
		t.Errorf("pod after create: generation %d status %+v", pod.Generation, pod.Status)
	}
	running := pod.DeepCopy()
	running.Status.Phase = v1.PodRunning
	running.Spec.NodeName = "sneaky"
	pods.PrepareForStatusUpdate(running, pod)
	if running.Spec.NodeName != "" || running.Status.Phase != v1.PodRunning {
		t.Errorf("pod status update kept %q / %q", running.Spec.NodeName, running.Status.Phase)
	}
	newImage := running.DeepCopy()
	newImage.Spec.Containers[0].Image = "busybox:2"
	newImage.Status = v1.PodStatus{}
	pods.PrepareForUpdate(newImage, running)
	if newImage.Generation != 2 || newImage.Status.Phase != v1.PodRunning {
		t.Errorf("pod update: generation %d phase %q", newImage.Generation, newImage.Status.Phase)
	}

	ns := &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	if errs := create(namespaces, ns); errs != nil {
		t.Fatal(errs)
	}
	if ns.Status.Phase != v1.NamespaceActive || len(ns.Spec.Finalizers) != 1 || ns.Labels[v1.LabelMetadataName] != "team" {
		t.Errorf("namespace after create: %+v", ns)
	}
}

func TestFieldSet(t *testing.T) {
	pod := &v1.Pod{
		ObjectMeta: meta("p"),
		Spec:       v1.PodSpec{NodeName: "n1", RestartPolicy: v1.RestartPolicyAlways, SchedulerName: "default-scheduler", ServiceAccountName: "sa"},
		Status:     v1.PodStatus{Phase: v1.PodRunning, PodIPs: []v1.PodIP{{IP: "10.1.0.5"}, {IP: "fd00::5"}}, NominatedNodeName: "n2"},
	}
	want := fields.Set{
		"metadata.name": "p", "metadata.namespace": "default",
		"spec.nodeName": "n1", "spec.restartPolicy": "Always", "spec.schedulerName": "default-scheduler",
		"spec.serviceAccountName": "sa", "spec.hostNetwork": "false",
		"status.phase": "Running", "status.podIP": "10.1.0.5", "status.nominatedNodeName": "n2",
	}
	if got := pods.FieldSet(pod); !reflect.DeepEqual(got, want) {
		t.Errorf("pod fields = %v", got)
	}

	ev := &v1.Event{
		ObjectMeta:          meta("p.1"),
		InvolvedObject:      v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p", UID: "u1", APIVersion: "v1", ResourceVersion: "7", FieldPath: "spec.containers{c}"},
		Reason:              "Pulled",
		Source:              v1.EventSource{Component: "kubelet", Host: "n1"},
		Type:                v1.EventTypeNormal,
		ReportingController: "kubelet",
	}
	wantEv := fields.Set{
		"metadata.name": "p.1", "metadata.namespace": "default",
		"involvedObject.kind": "Pod", "involvedObject.namespace": "default", "involvedObject.name": "p",
		"involvedObject.uid": "u1", "involvedObject.apiVersion": "v1", "involvedObject.resourceVersion": "7",
		"involvedObject.fieldPath": "spec.containers{c}", "reason": "Pulled", "reportingComponent": "kubelet",
		"source": "kubelet", "type": "Normal",
	}
	if got := coreEvents.FieldSet(ev); !reflect.DeepEqual(got, wantEv) {
		t.Errorf("event fields = %v", got)
	}
	// events.k8s.io/v1 has its own labels (upstream's
	// AddFieldLabelConversionsForEvent).
	wantV1 := fields.Set{
		"metadata.name": "p.1", "metadata.namespace": "default",
		"regarding.kind": "Pod", "regarding.namespace": "default", "regarding.name": "p",
		"regarding.uid": "u1", "regarding.apiVersion": "v1", "regarding.resourceVersion": "7",
		"regarding.fieldPath": "spec.containers{c}", "reason": "Pulled", "reportingController": "kubelet",
		"source": "kubelet", "type": "Normal",
	}
	if got := eventsV1.FieldSet(EventFromCore(ev)); !reflect.DeepEqual(got, wantV1) {
		t.Errorf("events.k8s.io event fields = %v", got)
	}
	// A new-style event has no source: "source" is its reporting controller.
	ev.Source, ev.ReportingController = v1.EventSource{}, "default-scheduler"
	if got := coreEvents.FieldSet(ev)["source"]; got != "default-scheduler" {
		t.Errorf("source of a new-style core event = %q", got)
	}
	if got := eventsV1.FieldSet(EventFromCore(ev))["source"]; got != "default-scheduler" {
		t.Errorf("source of an events.k8s.io event = %q", got)
	}
	if got := nodes.FieldSet(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: v1.NodeSpec{Unschedulable: true}}); !reflect.DeepEqual(got, fields.Set{"metadata.name": "n", "spec.unschedulable": "true"}) {
		t.Errorf("node fields = %v", got)
	}
}
