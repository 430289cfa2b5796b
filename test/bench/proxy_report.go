package main

import (
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/nodeagent/nodeagent/pkg/proxy"
)

func printProxyReport(r *proxyResult) {
	fmt.Println()
	fmt.Printf("service proxy: endpoint change -> nftables updated, %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Printf("machine:  nproc %d (%s), kernel %s, load average %s\n",
		runtime.NumCPU(), cpuModel(), firstLine("/proc/sys/kernel/osrelease"), loadAvg())
	fmt.Printf("nft:      %s (%s) through sigs.k8s.io/knftables: one `nft -f -` per transaction, one `nft --json list table` before a full one\n",
		r.nftVersion, r.nftPath)
	fmt.Printf("netns:    the bench's own (%s; the host's is %s), table ip %s, cluster CIDR %s\n",
		r.netns, r.hostNetns, proxy.TableName, proxyClusterCIDR)
	fmt.Printf("services: %d, 1 TCP port each (80 -> 8080), %d ready endpoints each (%d) in one EndpointSlice each;\n",
		proxyServices, proxyEndpoints, proxyServices*proxyEndpoints)
	fmt.Printf("          %d NodePort (every %dth), %d ClientIP affinity %d s (every %dth; %d of them both), %d plain ClusterIP\n",
		r.nodePorts, proxyNodePortN, r.affinity, v1.DefaultClientIPServiceAffinitySeconds, proxyAffinityN, r.both,
		proxyServices-r.nodePorts-r.affinity+r.both)
	kinds := make([]string, numChangeKinds)
	for k := range numChangeKinds {
		kinds[k] = k.String()
	}
	fmt.Printf("changes:  %d, each to one endpoint of one service (service (c*%d) mod %d), in turn: %s;\n",
		len(r.incremental), proxyStride, proxyServices, strings.Join(kinds, ", "))
	fmt.Println("          synced one after the other with Proxier.Sync (no debounce, no informers); then one sync undoing them all;")
	fmt.Println("          the full syncs are of the first sync's objects (1000 endpoints)")
	fmt.Println("clock:    Sync = the Proxier.Sync call given all services and slices (BuildServicePorts, diff, render, nft);")
	fmt.Println("          of which nft -f = knftables Run (the nft process applying the transaction), list = knftables ListAll")
	fmt.Println()

	fmt.Printf("%-44s %4s %8s %8s %8s %8s %7s   %s\n", "proxy sync, ms", "n", "median", "p90", "max", "nft -f", "list", "nft operations")
	row := func(label string, ss []proxySync) {
		if len(ss) == 0 {
			fmt.Printf("%-44s %4d %8s %8s %8s %8s %7s   %s\n", label, 0, "-", "-", "-", "-", "-", "-")
			return
		}
		wall, run, list, ops := syncFigures(ss)
		opsText := fmt.Sprintf("%.0f", median(ops))
		if lo, hi := slices.Min(ops), slices.Max(ops); lo != hi {
			opsText += fmt.Sprintf(" (%.0f-%.0f)", lo, hi)
		}
		nfts := 0
		for _, x := range ss {
			nfts = max(nfts, x.nfts)
		}
		switch {
		case slices.Max(ops) == 0 && nfts == 0:
			opsText += " (nft not run)"
		case slices.Max(ops) == 0:
			opsText += fmt.Sprintf(" + %d chain deletions", ss[0].res.DeletedChains)
		}
		listText := "-"
		if slices.Max(list) > 0 {
			listText = fmt.Sprintf("%.1f", median(list))
		}
		fmt.Printf("%-44s %4d %8.1f %8.1f %8.1f %8.1f %7s   %s\n", label, len(ss), median(wall), percentile(wall, 0.9),
			slices.Max(wall), median(run), listText, opsText)
	}
	row("first sync, full, empty namespace", []proxySync{r.first})
	row("incremental, 1 endpoint changed", r.incremental)
	for k := range numChangeKinds {
		row("  "+k.String(), filterKind(r.incremental, k))
	}
	row("deferred deletion of emptied chains", []proxySync{r.deferred})
	row("no change", []proxySync{r.noChange})
	row(fmt.Sprintf("undo all %d changes (%d services) at once", len(r.incremental), len(r.undo.res.Changed)),
		[]proxySync{r.undo})
	row("full resync, new Proxier on the table", r.resync)
	row("full sync into an empty table", r.fresh)
	fmt.Println("(p90 is nearest-rank; nft -f, list and operations are medians, operations with their range)")
	fmt.Println()
	fmt.Printf("%-44s %4s %8s %8s %8s\n", "floor: nft -f through knftables, ms", "n", "median", "p90", "max")
	for _, f := range []struct {
		where  string
		floors [2]nftFloor
	}{{"empty table", r.floorEmpty}, {"beside the table", r.floorFull}} {
		for _, fl := range f.floors {
			fmt.Printf("%-44s %4d %8.1f %8.1f %8.1f\n", fl.what+", "+f.where, len(fl.ms),
				median(fl.ms), percentile(fl.ms, 0.9), slices.Max(fl.ms))
		}
	}
	fmt.Println("(transactions that leave the table as it was: \"adds only\" is `add table`, \"with a deletion\" also adds and")
	fmt.Println(" deletes an empty chain; \"beside the table\": the table after the changes)")
	fmt.Println()

	if len(r.incremental) > 0 {
		_, _, _, incOps := syncFigures(r.incremental)
		var build []float64
		for _, s := range r.incremental {
			build = append(build, ms(s.wall-s.res.Duration))
		}
		fmt.Printf("nft operations: incremental median %.0f, %.1f%% of the first full sync's %d; each incremental sync rewrote 1 of %d service ports\n",
			median(incOps), 100*median(incOps)/float64(r.first.res.Operations), r.first.res.Operations, r.first.res.ServicePorts)
		fmt.Printf("BuildServicePorts over all objects (Sync call - SyncResult.Duration): median %.2f ms per incremental sync\n", median(build))
	}
	fmt.Printf("in the agent: Proxier.Run syncs no sooner than MinSyncPeriod (default %s) after the previous sync started, so\n",
		proxy.DefaultMinSyncPeriod)
	fmt.Printf("          endpoint change -> rules applied is the incremental Sync above plus up to %s of debounce, plus the\n",
		proxy.DefaultMinSyncPeriod)
	fmt.Println("          informer's watch delivery (neither simulated here)")
	fmt.Println("kube-proxy: not measured here, no baseline figure printed")
	fmt.Printf("verified: after the changes the table held %s;\n", r.verifiedChanged)
	fmt.Printf("          after the undo, and again after the full syncs, %s\n", r.verified)
	fmt.Printf("host:     nft list tables %s: %v\n", r.hostNote, r.hostAfter)
	fmt.Printf("section time %.1f s\n", r.total.Seconds())
}

func syncFigures(ss []proxySync) (wall, run, list, ops []float64) {
	for _, s := range ss {
		wall = append(wall, ms(s.wall))
		run = append(run, ms(s.run))
		list = append(list, ms(s.list))
		ops = append(ops, float64(s.res.Operations))
	}
	return wall, run, list, ops
}

func filterKind(ss []proxySync, k changeKind) []proxySync {
	var out []proxySync
	for _, s := range ss {
		if s.kind == k {
			out = append(out, s)
		}
	}
	return out
}
