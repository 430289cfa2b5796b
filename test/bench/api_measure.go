package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

type apiResult struct {
	startup, total time.Duration
	phases         []apiPhase

	serial, batch, fill apiRun
	gets                []float64
	lists               []apiList

	watchLat   []float64 // from Create returned: negative when ADDED came first
	watchSent  []float64 // from Create sent
	watchEarly int       // ADDED arrived before Create returned
	fanLast    []float64
	fanFirst   []float64

	// This process (server and clients), after a GC that returns freed
	// memory to the OS: VmRSS and Go heap in use, KiB.
	rssBefore, rssWatching, rssAfter    int64
	heapBefore, heapWatching, heapAfter int64
}

type apiPhaseFn struct {
	what string
	fn   func() error
}

type apiPhase struct {
	what string
	took time.Duration
}

// apiRun is a series of requests: per-request latency (ms) and wall time.
type apiRun struct {
	lat     []float64
	elapsed time.Duration
}

func (r apiRun) perSecond() float64 { return float64(len(r.lat)) / r.elapsed.Seconds() }

type apiList struct {
	pods  int
	rv    string
	raw   bool // response bytes only, not decoded by the client
	lat   []float64
	bytes int
}

func apiMeasure(ctx context.Context, cs *kubernetes.Clientset, r *apiResult) error {
	phase := func(what string, fn func() error) error {
		t := time.Now()
		err := fn()
		r.phases = append(r.phases, apiPhase{what, time.Since(t)})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	create := func(ns, prefix string) func(context.Context, int) error {
		return func(ctx context.Context, i int) error {
			_, err := cs.CoreV1().Pods(ns).Create(ctx, apiPod(fmt.Sprintf("%s-%05d", prefix, i)), metav1.CreateOptions{})
			return err
		}
	}
	var err error
	steps := []apiPhaseFn{
		{"namespaces", func() error {
			for _, ns := range []string{apiNSSerial, apiNSMain, apiNSWatch} {
				_, err := cs.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"create, 1 client", func() error {
			r.serial, err = apiParallel(ctx, 1, apiSerial, 0, create(apiNSSerial, "s"))
			return err
		}},
		{fmt.Sprintf("create %d, %d clients", apiBatch, apiClients), func() error {
			r.batch, err = apiParallel(ctx, apiClients, apiBatch, 0, create(apiNSMain, "p"))
			return err
		}},
		{"get", func() error {
			run, err := apiParallel(ctx, 1, apiGets, 0, func(ctx context.Context, i int) error {
				_, err := cs.CoreV1().Pods(apiNSMain).Get(ctx, fmt.Sprintf("p-%05d", i*7%apiBatch), metav1.GetOptions{})
				return err
			})
			r.gets = run.lat
			return err
		}},
		{fmt.Sprintf("list %d", apiBatch), func() error { return apiLists(ctx, cs, r, apiBatch) }},
		{"watch latency", func() error { return apiWatchLatency(ctx, cs, r) }},
		{"watch fan-out", func() error { return apiFanOut(ctx, cs, r) }},
	}
	if *apiPods > apiBatch { // before the watch phases
		steps = slices.Insert(steps, len(steps)-2,
			apiPhaseFn{fmt.Sprintf("create %d more, %d clients", *apiPods-apiBatch, apiClients), func() error {
				r.fill, err = apiParallel(ctx, apiClients, *apiPods-apiBatch, apiBatch, create(apiNSMain, "p"))
				return err
			}},
			apiPhaseFn{fmt.Sprintf("list %d", *apiPods), func() error { return apiLists(ctx, cs, r, *apiPods) }})
	}
	for _, s := range steps {
		if err := phase(s.what, s.fn); err != nil {
			return err
		}
	}
	return nil
}

// apiParallel runs op for i in [offset, offset+n) from clients goroutines.
func apiParallel(ctx context.Context, clients, n, offset int, op func(context.Context, int) error) (apiRun, error) {
	ctx, cancel := context.WithTimeout(ctx, apiOpTimeout)
	defer cancel()
	lat := make([]float64, n)
	var next atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	start := time.Now()
	for range clients {
		g.Go(func() error {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return nil
				}
				t := time.Now()
				if err := op(gctx, offset+i); err != nil {
					return err
				}
				lat[i] = ms(time.Since(t))
			}
		})
	}
	err := g.Wait()
	return apiRun{lat: lat, elapsed: time.Since(start)}, err
}

// apiLists lists the main namespace (holding pods pods) from etcd and from
// the watch cache, decoded by the typed client and as raw bytes.
func apiLists(ctx context.Context, cs *kubernetes.Clientset, r *apiResult, pods int) error {
	ctx, cancel := context.WithTimeout(ctx, apiOpTimeout)
	defer cancel()
	for _, rv := range []string{"", "0"} {
		for _, raw := range []bool{false, true} {
			l := apiList{pods: pods, rv: rv, raw: raw}
			for range apiListReps {
				t := time.Now()
				if raw {
					req := cs.CoreV1().RESTClient().Get().Namespace(apiNSMain).Resource("pods")
					if rv != "" {
						req = req.Param("resourceVersion", rv)
					}
					b, err := req.DoRaw(ctx)
					if err != nil {
						return err
					}
					l.bytes = len(b)
				} else {
					list, err := cs.CoreV1().Pods(apiNSMain).List(ctx, metav1.ListOptions{ResourceVersion: rv})
					if err != nil {
						return err
					}
					if len(list.Items) != pods {
						return fmt.Errorf("list rv=%q: %d pods, want %d", rv, len(list.Items), pods)
					}
				}
				l.lat = append(l.lat, ms(time.Since(t)))
			}
			r.lists = append(r.lists, l)
		}
	}
	return nil
}

// apiWatchLatency times, for serial creates, from Create returning to the
// ADDED event arriving on a watch of the namespace.
func apiWatchLatency(ctx context.Context, cs *kubernetes.Clientset, r *apiResult) error {
	ctx, cancel := context.WithTimeout(ctx, apiOpTimeout)
	defer cancel()
	pods := cs.CoreV1().Pods(apiNSWatch)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	type arrival struct {
		name string
		at   time.Time
	}
	added := make(chan arrival, apiWatchOps)
	go func() {
		for ev := range w.ResultChan() {
			at := time.Now()
			if p, ok := ev.Object.(*v1.Pod); ok && ev.Type == watch.Added {
				added <- arrival{p.Name, at}
			}
		}
	}()
	for i := range apiWatchOps {
		name := fmt.Sprintf("w-%05d", i)
		sent := time.Now()
		if _, err := pods.Create(ctx, apiPod(name), metav1.CreateOptions{}); err != nil {
			return err
		}
		returned := time.Now()
		select {
		case a := <-added:
			if a.name != name {
				return fmt.Errorf("ADDED %s, want %s", a.name, name)
			}
			if a.at.Before(returned) {
				r.watchEarly++
			}
			r.watchLat = append(r.watchLat, ms(a.at.Sub(returned)))
			r.watchSent = append(r.watchSent, ms(a.at.Sub(sent)))
		case <-ctx.Done():
			return fmt.Errorf("no ADDED event for %s: %w", name, ctx.Err())
		}
	}
	return nil
}

// apiFanOut opens apiWatchers watches on the watch namespace and updates
// one pod apiFanOutOps times, timing from Update returning to the first and
// to the last watcher seeing the change.
func apiFanOut(ctx context.Context, cs *kubernetes.Clientset, r *apiResult) error {
	ctx, cancel := context.WithTimeout(ctx, apiOpTimeout)
	defer cancel()
	pods := cs.CoreV1().Pods(apiNSWatch)
	target, err := pods.Get(ctx, "w-00000", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if r.rssBefore, r.heapBefore, err = apiMemory(); err != nil {
		return err
	}

	type seen struct {
		gen int
		at  time.Time
	}
	seenc := make(chan seen, apiWatchers*apiFanOutOps)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range apiWatchers {
		w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: target.ResourceVersion})
		if err != nil {
			return err
		}
		defer w.Stop()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ev := range w.ResultChan() {
				at := time.Now()
				p, ok := ev.Object.(*v1.Pod)
				if !ok || ev.Type != watch.Modified || p.Name != target.Name {
					continue
				}
				if gen, err := strconv.Atoi(p.Labels["gen"]); err == nil {
					seenc <- seen{gen, at}
				}
			}
		}()
	}
	if r.rssWatching, r.heapWatching, err = apiMemory(); err != nil {
		return err
	}

	for gen := range apiFanOutOps {
		target.Labels["gen"] = strconv.Itoa(gen)
		target, err = pods.Update(ctx, target, metav1.UpdateOptions{})
		if err != nil {
			return err
		}
		returned := time.Now()
		var first, last time.Time
		for n := 0; n < apiWatchers; {
			select {
			case s := <-seenc:
				if s.gen != gen {
					return fmt.Errorf("watcher saw gen %d during update %d", s.gen, gen)
				}
				if first.IsZero() || s.at.Before(first) {
					first = s.at
				}
				if s.at.After(last) {
					last = s.at
				}
				n++
			case <-ctx.Done():
				return fmt.Errorf("update %d: %d of %d watchers saw it: %w", gen, n, apiWatchers, ctx.Err())
			}
		}
		r.fanFirst = append(r.fanFirst, max(0, ms(first.Sub(returned))))
		r.fanLast = append(r.fanLast, max(0, ms(last.Sub(returned))))
	}
	if r.rssAfter, r.heapAfter, err = apiMemory(); err != nil {
		return err
	}
	return nil
}

// apiMemory is this process' VmRSS and Go heap in use (KiB) after GCs
// that empty sync.Pools and return freed memory to the OS, so that deltas
// are not the collector's or the scavenger's timing.
func apiMemory() (rss, heap int64, err error) {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	u, err := readUsage(os.Getpid())
	return u.rssKiB, int64(m.HeapInuse) / 1024, err
}

// apiPod is a typical small pod: one container with requests.
func apiPod(name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench", "gen": "none"}},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{
				Name:    "c",
				Image:   "busybox:1.36",
				Command: []string{"sh", "-c", "sleep 3600"},
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{
					v1.ResourceCPU:    resource.MustParse("10m"),
					v1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
		},
	}
}
