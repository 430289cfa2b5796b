package registry

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	deploymentColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Ready", "string", "Number of the pod with ready state"),
		col("Up-to-date", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]),
		col("Available", "string", appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]),
		ageColumn,
		wideCol("Containers", "string", "Names of each container in the template."),
		wideCol("Images", "string", "Images referenced by each container in the template."),
		wideCol("Selector", "string", appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	}
	replicaSetColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Desired", "integer", appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]),
		col("Current", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]),
		col("Ready", "integer", appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]),
		ageColumn,
		wideCol("Containers", "string", "Names of each container in the template."),
		wideCol("Images", "string", "Images referenced by each container in the template."),
		wideCol("Selector", "string", appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
	}
	leaseColumns = []metav1.TableColumnDefinition{
		nameColumn,
		col("Holder", "string", coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]),
		ageColumn,
	}
	eventColumns = []metav1.TableColumnDefinition{
		col("Last Seen", "string", v1.Event{}.SwaggerDoc()["lastTimestamp"]),
		col("Type", "string", v1.Event{}.SwaggerDoc()["type"]),
		col("Reason", "string", v1.Event{}.SwaggerDoc()["reason"]),
		col("Object", "string", v1.Event{}.SwaggerDoc()["involvedObject"]),
		wideCol("Subobject", "string", v1.ObjectReference{}.SwaggerDoc()["fieldPath"]),
		wideCol("Source", "string", v1.Event{}.SwaggerDoc()["source"]),
		col("Message", "string", v1.Event{}.SwaggerDoc()["message"]),
		wideCol("First Seen", "string", v1.Event{}.SwaggerDoc()["firstTimestamp"]),
		wideCol("Count", "string", v1.Event{}.SwaggerDoc()["count"]),
		{Name: "Name", Type: "string", Format: "name", Priority: 1, Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	}
)

// templateCells are the CONTAINERS, IMAGES and SELECTOR cells of workloads.
func templateCells(t *v1.PodTemplateSpec, sel *metav1.LabelSelector) []interface{} {
	var names, images []string
	for _, c := range t.Spec.Containers {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return []interface{}{strings.Join(names, ","), strings.Join(images, ","), selectorString(sel)}
}

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func (b *builder) deploymentRow(d *appsv1.Deployment) []interface{} {
	st := d.Status
	row := []interface{}{
		d.Name, fmt.Sprintf("%d/%d", st.ReadyReplicas, deref(d.Spec.Replicas)),
		int64(st.UpdatedReplicas), int64(st.AvailableReplicas), b.age(d.ObjectMeta),
	}
	return append(row, templateCells(&d.Spec.Template, d.Spec.Selector)...)
}

func (b *builder) replicaSetRow(rs *appsv1.ReplicaSet) []interface{} {
	row := []interface{}{
		rs.Name, int64(deref(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), b.age(rs.ObjectMeta),
	}
	return append(row, templateCells(&rs.Spec.Template, rs.Spec.Selector)...)
}

func (b *builder) leaseRow(l *coordinationv1.Lease) []interface{} {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []interface{}{l.Name, holder, b.age(l.ObjectMeta)}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// eventRow prints an event as kubectl get events does; new-style events
// (eventTime, series) fall back to those times and counts.
func (b *builder) eventRow(e *v1.Event) []interface{} {
	first := b.since(e.FirstTimestamp.Time)
	if e.FirstTimestamp.IsZero() {
		first = b.since(e.EventTime.Time)
	}
	last := b.since(e.LastTimestamp.Time)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = b.since(e.Series.LastObservedTime.Time)
		count = e.Series.Count
	} else if count == 0 {
		count = 1 // singleton events of the new API have no count
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	source := firstNonEmpty(e.Source.Component, e.ReportingController)
	if instance := firstNonEmpty(e.Source.Host, e.ReportingInstance); instance != "" {
		source += ", " + instance
	}
	return []interface{}{
		last, e.Type, e.Reason, target, e.InvolvedObject.FieldPath, source,
		strings.TrimSpace(e.Message), first, int64(count), e.Name,
	}
}
