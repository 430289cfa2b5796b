package resourcemetrics

import (
	"io"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// at is a point sec seconds after t0 with cpu core-seconds used so far.
func at(sec, cpu float64, mem uint64) Point {
	return Point{Timestamp: t0.Add(time.Duration(sec * float64(time.Second))), CPU: uint64(cpu * 1e9), Memory: mem}
}

func nodeBatch(p Point) *Batch {
	b := newBatch()
	b.Nodes["n1"] = p
	return b
}

var n1 = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}

func TestNodeMetricsNeedTwoPoints(t *testing.T) {
	s := NewStorage(DefaultResolution, quiet())
	s.Store(nodeBatch(at(0, 10, 100)))
	if got := s.NodeMetrics(n1); len(got) != 0 {
		t.Fatalf("one point: got %+v, want nothing (as metrics-server)", got)
	}
	s.Store(nodeBatch(at(15, 13, 200))) // 3 core-seconds in 15s: 200m
	got := s.NodeMetrics(n1)
	if len(got) != 1 {
		t.Fatalf("two points: got %d items", len(got))
	}
	m := got[0]
	if cpu := m.Usage[v1.ResourceCPU]; cpu.String() != "200m" {
		t.Errorf("cpu = %s, want 200m", cpu.String())
	}
	if mem := m.Usage[v1.ResourceMemory]; mem.Value() != 200 {
		t.Errorf("memory = %s, want the last working set, 200", mem.String())
	}
	if !m.Timestamp.Time.Equal(t0.Add(15*time.Second)) || m.Window.Duration != 15*time.Second {
		t.Errorf("timestamp %s window %s, want the last point's and 15s", m.Timestamp, m.Window.Duration)
	}
	if m.Name != "n1" || m.Labels["zone"] != "a" || m.CreationTimestamp.IsZero() {
		t.Errorf("metadata: %+v", m.ObjectMeta)
	}
}

func TestNodePoints(t *testing.T) {
	for _, tc := range []struct {
		name    string
		batches []Point // zero Timestamp: the node missing from that scrape
		want    string  // cpu, "" for no metrics
		window  time.Duration
	}{
		{"same sample twice keeps the window", []Point{at(0, 0, 1), at(10, 1, 1), at(10, 1, 1)}, "100m", 10 * time.Second},
		{"missing from a scrape is forgotten", []Point{at(0, 0, 1), at(10, 1, 1), {}, at(30, 3, 1)}, "", 0},
		{"older sample keeps an older previous", []Point{at(0, 0, 1), at(10, 1, 1), at(5, 0.5, 1)}, "100m", 5 * time.Second},
		{"sample older than the previous drops it", []Point{at(10, 0, 1), at(20, 1, 1), at(5, 0.5, 1)}, "", 0},
		{"decreasing counter is skipped", []Point{at(0, 5, 1), at(10, 1, 1)}, "", 0},
		{"rate of the last window", []Point{at(0, 0, 1), at(10, 1, 1), at(20, 4, 1)}, "300m", 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStorage(DefaultResolution, quiet())
			for _, p := range tc.batches {
				b := newBatch()
				if !p.Timestamp.IsZero() {
					b.Nodes["n1"] = p
				}
				s.Store(b)
			}
			got := s.NodeMetrics(n1)
			switch {
			case tc.want == "" && len(got) != 0:
				t.Errorf("got %+v, want no metrics", got)
			case tc.want != "" && len(got) != 1:
				t.Errorf("got %d items, want 1", len(got))
			case tc.want != "":
				if cpu := got[0].Usage[v1.ResourceCPU]; cpu.MilliValue() != mustMilli(t, tc.want) || got[0].Window.Duration != tc.window {
					t.Errorf("cpu %s window %s, want %s %s", cpu.String(), got[0].Window.Duration, tc.want, tc.window)
				}
			}
		})
	}
}

func mustMilli(t *testing.T, s string) int64 {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q.MilliValue()
}

var web = types.NamespacedName{Namespace: "ns", Name: "web"}

func podBatch(containers map[string]Point) *Batch {
	b := newBatch()
	b.Pods[web] = PodPoint{Containers: containers}
	return b
}

var webPod = &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"app": "web"}}}

func TestPodMetrics(t *testing.T) {
	s := NewStorage(DefaultResolution, quiet())
	s.Store(podBatch(map[string]Point{"a": at(0, 0, 10), "b": at(1, 0, 20)}))
	s.Store(podBatch(map[string]Point{"a": at(15, 1.5, 11), "b": at(16, 3, 21)}))
	got := s.PodMetrics(webPod, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other"}})
	if len(got) != 1 {
		t.Fatalf("got %d items, want the one pod with points", len(got))
	}
	pm := got[0]
	if len(pm.Containers) != 2 || pm.Containers[0].Name != "a" || pm.Containers[1].Name != "b" {
		t.Fatalf("containers: %+v", pm.Containers)
	}
	if a := pm.Containers[0].Usage[v1.ResourceCPU]; a.MilliValue() != 100 {
		t.Errorf("a cpu = %s, want 100m", a.String())
	}
	if b := pm.Containers[1].Usage[v1.ResourceCPU]; b.MilliValue() != 200 {
		t.Errorf("b cpu = %s, want 200m", b.String())
	}
	// As metrics-server: the earliest container's timestamp and window.
	if !pm.Timestamp.Time.Equal(t0.Add(15*time.Second)) || pm.Window.Duration != 15*time.Second {
		t.Errorf("timestamp %s window %s", pm.Timestamp, pm.Window.Duration)
	}
	if pm.Labels["app"] != "web" || pm.Namespace != "ns" {
		t.Errorf("metadata: %+v", pm.ObjectMeta)
	}
}

func TestPodMetricsNeedEveryContainer(t *testing.T) {
	s := NewStorage(DefaultResolution, quiet())
	s.Store(podBatch(map[string]Point{"a": at(0, 0, 10)}))
	s.Store(podBatch(map[string]Point{"a": at(15, 1, 10), "new": at(15, 1, 10)}))
	if got := s.PodMetrics(webPod); len(got) != 0 {
		t.Errorf("a container without a previous point: got %+v, want no pod metrics", got)
	}
}

func TestContainerRestartStartsOver(t *testing.T) {
	s := NewStorage(DefaultResolution, quiet())
	s.Store(podBatch(map[string]Point{"a": at(0, 5, 10)}))
	restarted := at(15, 0.1, 10)
	restarted.StartTime = t0.Add(14 * time.Second) // after the stored point
	s.Store(podBatch(map[string]Point{"a": restarted}))
	if got := s.PodMetrics(webPod); len(got) != 0 {
		t.Errorf("restarted container: got %+v, want no metrics until its second point", got)
	}
}

func TestFreshContainerCountsFromItsStart(t *testing.T) {
	s := NewStorage(time.Minute, quiet())
	p := at(30, 2, 10) // started 20s before: within one resolution, over 10s
	p.StartTime = t0.Add(10 * time.Second)
	s.Store(podBatch(map[string]Point{"a": p}))
	got := s.PodMetrics(webPod)
	if len(got) != 1 {
		t.Fatalf("fresh container: got %d items, want its rate since start", len(got))
	}
	if cpu := got[0].Containers[0].Usage[v1.ResourceCPU]; cpu.MilliValue() != 100 || got[0].Window.Duration != 20*time.Second {
		t.Errorf("cpu %s window %s, want 100m over 20s", cpu.String(), got[0].Window.Duration)
	}
}
