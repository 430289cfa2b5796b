package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"

	"github.com/nodeagent/nodeagent/pkg/agentconfig"
	"github.com/nodeagent/nodeagent/pkg/podcgroup"
)

// nodeCgroupRetry is how often a kubepods limit the kernel refused is
// tried again (the kubelet's minute).
const nodeCgroupRetry = time.Minute

// setUpNodeCgroups is the kubelet's container manager start for the
// node-level cgroups: kubepods sized to the node allocatable (or the
// capacity), the enforced reservations on their existing cgroups, and the
// QoS tiers, before any pod cgroup is made under them. A reservation that
// cannot be enforced stops the agent, as it stops the kubelet; a kubepods
// limit below what the pods already use is retried every minute until
// evictions make room. recorder may be nil (standalone); observe (nil:
// none) receives each cgroup write's duration by the kubelet's cgroup
// manager operation, create for a cgroup that was missing, else update.
func setUpNodeCgroups(ctx context.Context, cfg *agentconfig.Config, nodeName, mountRoot string, recorder record.EventRecorder, observe func(string, time.Duration), log *slog.Logger) error {
	if cfg.CgroupsPerQOS != nil && !*cfg.CgroupsPerQOS {
		return nil // the kubelet's no-op QoS manager: pods run flat under cgroupRoot
	}
	host := podcgroup.Host{Proc: "/proc", Sys: "/sys"}
	plan := podcgroup.PlanNode(podcgroup.NodeConfig{
		CgroupRoot:           cgroupRoot(cfg),
		Capacity:             host.InternalCapacity(capacity(cfg)),
		SystemReserved:       parseReserved(cfg.SystemReserved),
		KubeReserved:         parseReserved(cfg.KubeReserved),
		Enforce:              cfg.EnforceNodeAllocatable,
		SystemReservedCgroup: cfg.SystemReservedCgroup,
		KubeReservedCgroup:   cfg.KubeReservedCgroup,
	})
	fs := podcgroup.FS{Root: mountRoot}
	node := &v1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: nodeName}
	event := func(typ, reason, msg string) {
		if recorder != nil {
			recorder.Event(node, typ, reason, msg)
		}
	}
	var kubepodsErr, reservedErr error
	timeCgroupOp(observe, fs.Exists(plan[0].Name), func() { kubepodsErr, reservedErr = fs.ApplyNode(plan) })
	if reservedErr != nil {
		event(v1.EventTypeWarning, "FailedNodeAllocatableEnforcement", reservedErr.Error())
		return reservedErr
	}
	for _, w := range plan[1:] {
		event(v1.EventTypeNormal, "NodeAllocatableEnforced", "Updated limits on "+w.Kind+" cgroup "+w.Name)
	}
	if kubepodsErr == nil {
		event(v1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
	} else {
		event(v1.EventTypeWarning, "FailedNodeAllocatableEnforcement", kubepodsErr.Error())
		log.Warn("node allocatable not enforced yet; retrying", "err", kubepodsErr, "retryIn", nodeCgroupRetry)
		go retryKubepods(ctx, fs, plan[:1], event, log)
	}
	qos := podcgroup.QOSCgroups{Kubepods: plan[0].Name}
	var err error
	timeCgroupOp(observe, fs.Exists(qos.Burstable()), func() { err = fs.ApplyQOS(qos, podcgroup.PlanQOS(nil, host.HugePageSizes())) })
	if err != nil {
		return fmt.Errorf("failed to create %w", err)
	}
	log.Info("node cgroups set up", "kubepods", plan[0].Name, "enforceNodeAllocatable", cfg.EnforceNodeAllocatable)
	return nil
}

func retryKubepods(ctx context.Context, fs podcgroup.FS, plan []podcgroup.NodeCgroup, event func(typ, reason, msg string), log *slog.Logger) {
	t := time.NewTicker(nodeCgroupRetry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err, _ := fs.ApplyNode(plan)
		if err == nil {
			event(v1.EventTypeNormal, "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
			log.Info("node allocatable enforced")
			return
		}
		event(v1.EventTypeWarning, "FailedNodeAllocatableEnforcement", err.Error())
	}
}

// timeCgroupOp runs one cgroup write and reports its duration as the
// kubelet's cgroup manager Create (the cgroup was missing) or Update.
func timeCgroupOp(observe func(string, time.Duration), existed bool, write func()) {
	start := time.Now()
	write()
	if observe == nil {
		return
	}
	op := podcgroup.OpCreate
	if existed {
		op = podcgroup.OpUpdate
	}
	observe(op, time.Since(start))
}

// parseReserved reads a validated systemReserved or kubeReserved.
func parseReserved(m map[string]string) v1.ResourceList {
	out := v1.ResourceList{}
	for k, v := range m {
		if q, err := resource.ParseQuantity(v); err == nil {
			out[v1.ResourceName(k)] = q
		}
	}
	return out
}
