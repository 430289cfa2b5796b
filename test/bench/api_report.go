package main

import (
	"fmt"
	"runtime"
	"time"
)

func printAPIReport(r *apiResult) {
	fmt.Printf("API server benchmark, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  nproc %d (%s), load average %s\n", runtime.NumCPU(), cpuModel(), loadAvg())
	fmt.Println("server:   pkg/controlplane/server in this process, embedded etcd, temp data dir, HTTPS on 127.0.0.1")
	fmt.Println("clients:  client-go typed clientset (one HTTP/2 connection), QPS/Burst 1e6; answers are JSON")
	fmt.Println()
	fmt.Printf("%-17s %-36s %5s %9s %9s   %s\n", "API server, ms", "", "n", "median", "p99", "")
	row := func(group, label string, xs []float64, extra string) {
		fmt.Printf("%-17s %-36s %5d %9.1f %9.1f   %s\n", group, label, len(xs), median(xs), percentile(xs, 0.99), extra)
	}
	rate := func(run apiRun, what string) string {
		return fmt.Sprintf("%.0f %s/s (%.1f s)", run.perSecond(), what, run.elapsed.Seconds())
	}
	row("create pod", "1 client", r.serial.lat, rate(r.serial, "creates"))
	row("", fmt.Sprintf("%d clients, %d pods in 1 namespace", apiClients, len(r.batch.lat)), r.batch.lat, rate(r.batch, "creates"))
	if len(r.fill.lat) > 0 {
		row("", fmt.Sprintf("%d clients, %d more (to %d)", apiClients, len(r.fill.lat), *apiPods), r.fill.lat, rate(r.fill, "creates"))
	}
	row("get pod by name", "1 client", r.gets, "")
	group := ""
	for i, l := range r.lists {
		if i == 0 || l.pods != r.lists[i-1].pods {
			group = fmt.Sprintf("list %d pods", l.pods)
		}
		src := `rv="" (etcd)`
		if l.rv == "0" {
			src = `rv="0" (watch cache)`
		}
		how, extra := "typed, decoded", ""
		if l.raw {
			how, extra = "raw bytes", fmt.Sprintf("%.2f MiB", float64(l.bytes)/(1<<20))
		}
		row(group, src+", "+how, l.lat, extra)
		group = ""
	}
	row("watch", "Create returned -> ADDED (signed)", r.watchLat,
		fmt.Sprintf("%d of %d arrived before Create returned", r.watchEarly, len(r.watchLat)))
	row("", "Create sent -> ADDED", r.watchSent, "")
	row(fmt.Sprintf("watch, %d", apiWatchers), "Update returned -> all have seen it", r.fanLast, "")
	row("watchers", "Update returned -> first has seen it", r.fanFirst, "")
	fmt.Println("(p99 is nearest-rank: the maximum when n < 100)")
	fmt.Println()
	fmt.Printf("%-44s %9s %9s   (after debug.FreeOSMemory)\n", "bench process: server and clients, MiB", "VmRSS", "Go heap")
	mem := func(label string, rss, heap int64) {
		fmt.Printf("%-44s %9.1f %9.1f\n", label, mib(rss), mib(heap))
	}
	mem(fmt.Sprintf("before the %d watchers", apiWatchers), r.rssBefore, r.heapBefore)
	mem(fmt.Sprintf("%d watchers open", apiWatchers), r.rssWatching, r.heapWatching)
	mem(fmt.Sprintf("after %d updates, watchers open", apiFanOutOps), r.rssAfter, r.heapAfter)
	mem("delta", r.rssAfter-r.rssBefore, r.heapAfter-r.heapBefore)
	fmt.Println()
	fmt.Printf("section time %.1f s: server start %.1f s", r.total.Seconds(), r.startup.Seconds())
	for _, p := range r.phases {
		fmt.Printf(", %s %.1f s", p.what, p.took.Seconds())
	}
	fmt.Println()
}
