package apiserver

import (
	"context"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/request"
	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/registry"
	"github.com/nodeagent/nodeagent/pkg/controlplane/resourcemetrics"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// newScraper scrapes the Ready nodes' kubelets for metrics.k8s.io.
func (s *Server) newScraper(resolution time.Duration) (*resourcemetrics.Scraper, error) {
	return resourcemetrics.New(resourcemetrics.Config{
		Nodes:      s.readyNodes,
		Fetch:      s.kubelet.ResourceMetrics,
		Resolution: resolution,
		Logger:     s.cfg.Logger,
	})
}

// readyNodes are the nodes whose Ready condition is True: others have no
// agent answering, or one that cannot measure.
func (s *Server) readyNodes(ctx context.Context) ([]*v1.Node, error) {
	list, err := s.store("/v1/nodes").List(ctx, "", storage.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var ready []*v1.Node
	for _, obj := range list.Items {
		if node := obj.(*v1.Node); nodeReady(node) {
			ready = append(ready, node)
		}
	}
	return ready, nil
}

func nodeReady(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// serveResourceMetrics answers get and list of metrics.k8s.io nodes and
// pods as metrics-server's REST storage: the objects are read from the
// API (a missing one is that 404), their metrics from the scrapes, and
// an object without metrics yet is not found (get) or left out (list).
func (s *Server) serveResourceMetrics(w http.ResponseWriter, r *http.Request, res *registry.Resource, ri request.Info) {
	if ri.Verb != "get" && ri.Verb != "list" {
		responsewriters.WriteError(w, responsewriters.MethodNotSupported(groupResource(res), ri.Verb))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	objs, err := s.metricsObjects(ctx, r, res, ri)
	switch {
	case err != nil:
		responsewriters.WriteError(w, err)
	case ri.Verb == "list":
		s.writeMetricsList(w, r, res, objs)
	case len(objs) == 0:
		responsewriters.WriteError(w, apierrors.NewNotFound(groupResource(res), metricsName(ri)))
	default:
		s.writeObject(w, r, res, http.StatusOK, objs[0])
	}
}

// metricsName is how metrics-server names a missing object: pods by
// namespace/name.
func metricsName(ri request.Info) string {
	if ri.Namespace != "" {
		return ri.Namespace + "/" + ri.Name
	}
	return ri.Name
}

// metricsObjects are the metrics of the requested nodes or pods.
func (s *Server) metricsObjects(ctx context.Context, r *http.Request, res *registry.Resource, ri request.Info) ([]runtime.Object, error) {
	sel, err := parseMetricsSelectors(r)
	if err != nil {
		return nil, err
	}
	store := s.store("/v1/" + res.Plural) // the nodes or the pods themselves
	var items []runtime.Object
	if ri.Name != "" {
		obj, err := store.Get(ctx, ri.Namespace, ri.Name)
		if err != nil {
			return nil, err
		}
		items = []runtime.Object{obj}
	} else {
		list, err := store.List(ctx, ri.Namespace, storage.ListOptions{ResourceVersion: "0", Filter: sel.matchLabels})
		if err != nil {
			return nil, err
		}
		items = list.Items
	}
	return sel.filterFields(s.metricsOf(res, items)), nil
}

// metricsOf looks up the scraped metrics of nodes or pods.
func (s *Server) metricsOf(res *registry.Resource, items []runtime.Object) []runtime.Object {
	var out []runtime.Object
	if res.Plural == "nodes" {
		nodes := make([]*v1.Node, len(items))
		for i, o := range items {
			nodes[i] = o.(*v1.Node)
		}
		for _, m := range s.scraper.Storage().NodeMetrics(nodes...) {
			out = append(out, &m)
		}
		return out
	}
	pods := make([]*v1.Pod, len(items))
	for i, o := range items {
		pods[i] = o.(*v1.Pod)
	}
	for _, m := range s.scraper.Storage().PodMetrics(pods...) {
		out = append(out, &m)
	}
	return out
}

// metricsSelectors are a list's label and field selectors. Fields are
// metadata.name and metadata.namespace, matched on the metrics objects,
// as metrics-server does.
type metricsSelectors struct {
	labels labels.Selector
	fields fields.Selector
}

func parseMetricsSelectors(r *http.Request) (metricsSelectors, error) {
	q := r.URL.Query()
	ls, err := labels.Parse(q.Get("labelSelector"))
	if err != nil {
		return metricsSelectors{}, responsewriters.BadRequest("unable to parse requirement: %v", err)
	}
	fs, err := fields.ParseSelector(q.Get("fieldSelector"))
	if err != nil {
		return metricsSelectors{}, responsewriters.BadRequest("invalid field selector: %v", err)
	}
	return metricsSelectors{labels: ls, fields: fs}, nil
}

func (sel metricsSelectors) matchLabels(obj runtime.Object) bool {
	m, ok := obj.(metav1.Object)
	return ok && sel.labels.Matches(labels.Set(m.GetLabels()))
}

func (sel metricsSelectors) filterFields(objs []runtime.Object) []runtime.Object {
	if sel.fields.Empty() {
		return objs
	}
	var out []runtime.Object
	for _, obj := range objs {
		m := obj.(metav1.Object)
		set := fields.Set{"metadata.name": m.GetName()}
		if m.GetNamespace() != "" {
			set["metadata.namespace"] = m.GetNamespace()
		}
		if sel.fields.Matches(set) {
			out = append(out, obj)
		}
	}
	return out
}

// writeMetricsList answers a NodeMetricsList or PodMetricsList, or its
// Table.
func (s *Server) writeMetricsList(w http.ResponseWriter, r *http.Request, res *registry.Resource, objs []runtime.Object) {
	if wantsTable(r) {
		responsewriters.WriteJSON(w, http.StatusOK, s.table(r, res, objs, &metav1.ListMeta{}))
		return
	}
	list, err := listObject(res, objs, "", "", nil)
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	responsewriters.WriteJSON(w, http.StatusOK, list)
}

// isResourceMetrics reports whether res is served from the scrapes rather
// than from storage.
func isResourceMetrics(res *registry.Resource) bool {
	return res.GVK.Group == metricsv1beta1.GroupName
}
