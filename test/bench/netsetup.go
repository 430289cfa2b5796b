package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"

	nart "github.com/nodeagent/nodeagent/pkg/runtime"
)

// measureSandboxNetwork times RunPodSandbox with the pod network (the
// runtime runs the CNI plugins: bridge, host-local, portmap) and with the
// host's (no CNI), alternately, on the same instance in the same run: the
// difference of the medians is what setting up a pod's network adds to
// its start.
func measureSandboxNetwork(ctx context.Context, cl *cleanups, cri *nart.Client, base string, reps int) (podNet, hostNet []time.Duration, err error) {
	r := &rawRunner{cri: cri, dir: filepath.Join(base, "netsetup"), sandboxes: map[string]*v1.Pod{}}
	cl.add("remove the network set-up sandboxes", r.removeAll)
	fmt.Printf("sandbox network set-up: %d pod-network and %d host-network sandboxes, alternately ...\n", reps, reps)
	for i := range reps + 1 { // +1: warm-up pair
		for _, host := range []bool{false, true} {
			d, err := r.timeSandbox(ctx, fmt.Sprintf("net%v-%02d", host, i), host)
			if err != nil {
				return nil, nil, err
			}
			switch {
			case i == 0:
			case host:
				hostNet = append(hostNet, d)
			default:
				podNet = append(podNet, d)
			}
		}
		if err := r.removeAll(ctx); err != nil {
			return nil, nil, err
		}
	}
	return podNet, hostNet, nil
}

// timeSandbox runs one sandbox and returns how long RunPodSandbox took.
func (r *rawRunner) timeSandbox(ctx context.Context, name string, hostNetwork bool) (time.Duration, error) {
	pod := runtimePod(name)
	cfg := r.sandboxConfig(pod)
	if hostNetwork {
		// The host's UTS namespace comes with its network: no hostname.
		cfg.Linux.SecurityContext.NamespaceOptions.Network = criv1.NamespaceMode_NODE
		cfg.Hostname = ""
	}
	if _, err := r.prepareFiles(pod, cfg); err != nil {
		return 0, err
	}
	t0 := time.Now()
	id, err := r.cri.RunPodSandbox(ctx, cfg, "")
	if err != nil {
		return 0, fmt.Errorf("run sandbox %s: %w", name, err)
	}
	d := time.Since(t0)
	r.track(id, pod)
	return d, nil
}

// printSandboxNetwork prints the two medians and their difference.
func printSandboxNetwork(podNet, hostNet []time.Duration) {
	pm, hm := medianDur(podNet), medianDur(hostNet)
	fmt.Printf("\nsandbox network set-up (RunPodSandbox, median of %d each, same instance and run)\n", len(podNet))
	fmt.Printf("%-44s %9.1f ms\n", "pod network (CNI bridge, host-local, portmap)", ms(pm))
	fmt.Printf("%-44s %9.1f ms\n", "host network (no CNI)", ms(hm))
	fmt.Printf("%-44s %9.1f ms\n", "network set-up (difference)", ms(pm-hm))
}

func medianDur(ds []time.Duration) time.Duration {
	xs := make([]float64, len(ds))
	for i, d := range ds {
		xs[i] = float64(d)
	}
	return time.Duration(median(xs))
}
