package main

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/kubernetes"
)

// requestCounts are counters summed by a key of their labels: the API
// server's apiserver_request_total by "VERB resource[/subresource]" (all
// codes and clients), the agent's kubelet_runtime_operations_total by
// operation_type.
type requestCounts map[string]float64

func readRequestCounts(ctx context.Context, cs kubernetes.Interface) (requestCounts, error) {
	return readCounts(ctx, cs, "/metrics", "apiserver_request_total", func(l map[string]string) string {
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		return key
	})
}

// readCRICounts reads the agent's CRI calls through the API server's node
// proxy.
func readCRICounts(ctx context.Context, cs kubernetes.Interface, node string) (requestCounts, error) {
	return readCounts(ctx, cs, "/api/v1/nodes/"+node+"/proxy/metrics", "kubelet_runtime_operations_total",
		func(l map[string]string) string { return l["operation_type"] })
}

func readCounts(ctx context.Context, cs kubernetes.Interface, path, family string, key func(map[string]string) string) (requestCounts, error) {
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath(path).DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("metrics %s: %w", path, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(raw)))
	if err != nil {
		return nil, fmt.Errorf("metrics %s: %w", path, err)
	}
	out := requestCounts{}
	for _, m := range families[family].GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		out[key(l)] += m.GetCounter().GetValue()
	}
	return out, nil
}

// printRequests prints the requests the burst made, per pod, most first.
func printRequests(title string, after, before requestCounts, pods int) {
	type row struct {
		key string
		n   float64
	}
	var rows []row
	var total float64
	for k, v := range after {
		if d := v - before[k]; d > 0 {
			rows = append(rows, row{k, d})
			total += d
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		return rows[i].n > rows[j].n || rows[i].n == rows[j].n && rows[i].key < rows[j].key
	})
	fmt.Printf("%s: %.0f, %.1f per pod\n", title, total, total/float64(pods))
	for _, r := range rows {
		fmt.Printf("  %-44s %6.0f %6.2f/pod\n", r.key, r.n, r.n/float64(pods))
	}
}
