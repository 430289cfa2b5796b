package podworker

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodeagent/nodeagent/pkg/podutil"
)

// The pods of upstream's preemption_test.go getTestPods.
func preemptionTestPods() map[string]*v1.Pod {
	pod := func(name, cpu, mem string, guaranteed bool) *v1.Pod {
		p := reqPod(name, cpu, mem)
		if guaranteed {
			p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests.DeepCopy()
		}
		return p
	}
	critical := func(p *v1.Pod, class string, priority int32) *v1.Pod {
		p.Namespace, p.Spec.PriorityClassName, p.Spec.Priority = "kube-system", class, &priority
		return p
	}
	return map[string]*v1.Pod{
		"tiny":                    pod("tiny", "1m", "1Mi", false),
		"bestEffort":              pod("bestEffort", "", "", false),
		"cluster-critical":        critical(pod("cluster-critical", "100m", "100Mi", false), "system-cluster-critical", podutil.SystemCriticalPriority),
		"node-critical":           critical(pod("node-critical", "100m", "100Mi", false), podutil.SystemNodeCritical, podutil.SystemCriticalPriority+100),
		"burstable":               pod("burstable", "100m", "100Mi", false),
		"guaranteed":              pod("guaranteed", "100m", "100Mi", true),
		"high-request-burstable":  pod("high-request-burstable", "300m", "300Mi", false),
		"high-request-guaranteed": pod("high-request-guaranteed", "300m", "300Mi", true),
	}
}

// reqs is upstream's getAdmissionRequirementList: milli-CPU, MiB, pods;
// zeros are left out.
func reqs(cpu, memMi, pods int64) requirements {
	var out requirements
	if cpu > 0 {
		out = append(out, requirement{v1.ResourceCPU, cpu})
	}
	if memMi > 0 {
		out = append(out, requirement{v1.ResourceMemory, memMi << 20})
	}
	if pods > 0 {
		out = append(out, requirement{v1.ResourcePods, pods})
	}
	return out
}

func podNames(pods []*v1.Pod) string {
	var names []string
	for _, p := range pods {
		names = append(names, p.Name)
	}
	return strings.Join(names, ",")
}

// upstream's TestGetPodsToPreempt, case for case.
func TestPodsToPreempt(t *testing.T) {
	all := preemptionTestPods()
	pods := func(names ...string) []*v1.Pod {
		var out []*v1.Pod
		for _, n := range names {
			out = append(out, all[n])
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		preemptor string
		pods      []*v1.Pod
		reqs      requirements
		want      string // victims, in order
		err       string
	}{
		{name: "no requirements", preemptor: "cluster-critical", reqs: reqs(0, 0, 0)},
		{name: "no pods", preemptor: "cluster-critical", reqs: reqs(0, 0, 1),
			err: "no set of running pods found to reclaim resources: [(res: pods, q: 1), ]"},
		{name: "equal pods and resources requirements", preemptor: "cluster-critical", pods: pods("burstable"),
			reqs: reqs(100, 100, 1), want: "burstable"},
		{name: "higher requirements than pod requests", preemptor: "cluster-critical", pods: pods("burstable"),
			reqs: reqs(200, 200, 2),
			err:  "no set of running pods found to reclaim resources: [(res: cpu, q: 100), (res: memory, q: 104857600), (res: pods, q: 1), ]"},
		{name: "choose between bestEffort and burstable", preemptor: "cluster-critical", pods: pods("burstable", "bestEffort"),
			reqs: reqs(0, 0, 1), want: "bestEffort"},
		{name: "choose between burstable and guaranteed", preemptor: "cluster-critical", pods: pods("burstable", "guaranteed"),
			reqs: reqs(0, 0, 1), want: "burstable"},
		{name: "choose lower request burstable if it meets requirements", preemptor: "cluster-critical",
			pods: pods("bestEffort", "high-request-burstable", "burstable"), reqs: reqs(100, 100, 0), want: "burstable"},
		{name: "choose higher request burstable if lower does not meet requirements", preemptor: "cluster-critical",
			pods: pods("bestEffort", "burstable", "high-request-burstable"), reqs: reqs(150, 150, 0), want: "high-request-burstable"},
		{name: "multiple pods required", preemptor: "cluster-critical",
			pods: pods("bestEffort", "burstable", "high-request-burstable", "guaranteed", "high-request-guaranteed"),
			reqs: reqs(350, 350, 0), want: "high-request-burstable,burstable"},
		{name: "evict guaranteed when we have to, and dont evict the extra burstable", preemptor: "cluster-critical",
			pods: pods("bestEffort", "burstable", "high-request-burstable", "guaranteed", "high-request-guaranteed"),
			reqs: reqs(0, 550, 0), want: "high-request-burstable,high-request-guaranteed"},
		{name: "evict cluster critical pod for node critical pod", preemptor: "node-critical", pods: pods("cluster-critical"),
			reqs: reqs(100, 0, 0), want: "cluster-critical"},
		{name: "can not evict node critical pod for cluster critical pod", preemptor: "cluster-critical", pods: pods("node-critical"),
			reqs: reqs(100, 0, 0), err: "no set of running pods found to reclaim resources: [(res: cpu, q: 100), ]"},
		{name: "critical pods cannot be preempted", preemptor: "cluster-critical", pods: pods("cluster-critical"),
			reqs: reqs(0, 0, 1), err: "no set of running pods found to reclaim resources: [(res: pods, q: 1), ]"},
		{name: "best effort pods free no memory", preemptor: "cluster-critical", pods: pods("bestEffort"),
			reqs: reqs(0, 1, 0), err: "no set of running pods found to reclaim resources: [(res: memory, q: 1048576), ]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := podsToPreempt(all[tc.preemptor], tc.pods, tc.reqs)
			if fmt.Sprint(err) != fmt.Sprint(errOrNil(tc.err)) {
				t.Fatalf("err = %v, want %q", err, tc.err)
			}
			if podNames(got) != tc.want {
				t.Errorf("victims = %s, want %s", podNames(got), tc.want)
			}
		})
	}
}

func errOrNil(s string) error {
	if s == "" {
		return nil
	}
	return fmt.Errorf("%s", s)
}

// upstream's TestAdmissionRequirementsDistance and
// TestAdmissionRequirementsSubtract.
func TestRequirementsDistanceAndSubtract(t *testing.T) {
	all := preemptionTestPods()
	for _, tc := range []struct {
		name      string
		reqs      requirements
		pod       string
		distance  float64
		remaining requirements
	}{
		{name: "no requirements", reqs: reqs(0, 0, 0), pod: "burstable", distance: 0, remaining: reqs(0, 0, 0)},
		{name: "no requests, some requirements", reqs: reqs(100, 100, 1), pod: "bestEffort", distance: 2, remaining: reqs(100, 100, 0)},
		{name: "equal requests and requirements", reqs: reqs(100, 100, 1), pod: "burstable", distance: 0, remaining: reqs(0, 0, 0)},
		{name: "higher requests than requirements", reqs: reqs(50, 50, 0), pod: "burstable", distance: 0, remaining: reqs(0, 0, 0)},
		{name: "lower requests than requirements", reqs: reqs(200, 200, 1), pod: "burstable", distance: 0.5, remaining: reqs(100, 100, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := tc.reqs.distance(all[tc.pod]); d != tc.distance {
				t.Errorf("distance = %v, want %v", d, tc.distance)
			}
			if got := tc.reqs.subtract(all[tc.pod]); got.String() != tc.remaining.String() {
				t.Errorf("subtract = %s, want %s", got, tc.remaining)
			}
		})
	}
}

// podRequest counts one per pod, milli-CPU, and the overhead only on a
// request that is not zero.
func TestPodRequest(t *testing.T) {
	p := reqPod("a", "250m", "")
	p.Spec.Overhead = v1.ResourceList{v1.ResourceCPU: resource.MustParse("50m"), v1.ResourceMemory: resource.MustParse("1Mi")}
	if got := podRequest(p, v1.ResourceCPU); got != 300 {
		t.Errorf("cpu = %d, want 300", got)
	}
	if got := podRequest(p, v1.ResourceMemory); got != 0 {
		t.Errorf("memory = %d, want 0 (no request: no overhead)", got)
	}
	if got := podRequest(p, v1.ResourcePods); got != 1 {
		t.Errorf("pods = %d, want 1", got)
	}
}

// planPreemption is HandleAdmissionFailure over the general filter's
// failures.
func TestPlanPreemption(t *testing.T) {
	static := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{podutil.ConfigSourceAnnotation: podutil.SourceFile}
		return p
	}
	prio := func(p *v1.Pod, v int32) *v1.Pod { p.Spec.Priority = &v; return p }
	node := NodeInfo{Name: "node1", Labels: defaultNodeLabels("node1", nil), Allocatable: v1.ResourceList{
		v1.ResourceCPU: resource.MustParse("1"), v1.ResourcePods: resource.MustParse("2")}}
	low := prio(reqPod("low", "600m", ""), 10)
	other := reqPod("other", "", "")
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		victims  string
		signal   v1.ResourceName
		reason   string // of the first remaining failure
		err      string
	}{
		{name: "not critical: failures unchanged", pod: reqPod("new", "600m", ""), admitted: []*v1.Pod{low},
			reason: "OutOfcpu"},
		{name: "critical short of cpu: the pod it may preempt", pod: static(reqPod("new", "600m", "")), admitted: []*v1.Pod{low},
			victims: "low", signal: v1.ResourceCPU},
		{name: "critical short of pods: the best-effort pod first", pod: static(reqPod("new", "", "")), admitted: []*v1.Pod{low, other},
			victims: "other", signal: v1.ResourcePods},
		{name: "critical short of cpu and pods: one pod frees both", pod: static(reqPod("new", "600m", "")), admitted: []*v1.Pod{low, static(reqPod("s", "", ""))},
			victims: "low", signal: v1.ResourcePods},
		{name: "another reason too: only the others remain", pod: static(withPorts(reqPod("new", "600m", ""), v1.ContainerPort{HostPort: 80, ContainerPort: 80})),
			admitted: []*v1.Pod{withPorts(low, v1.ContainerPort{HostPort: 80, ContainerPort: 80})}, reason: "NodePorts"},
		{name: "nothing it may preempt", pod: static(reqPod("new", "600m", "")), admitted: []*v1.Pod{static(reqPod("s", "600m", ""))},
			signal: v1.ResourceCPU,
			err:    "preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 200), ]"},
		{name: "static of higher priority over static", pod: prio(static(reqPod("new", "600m", "")), 100), admitted: []*v1.Pod{prio(static(reqPod("s", "600m", "")), 10)},
			victims: "s", signal: v1.ResourceCPU},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planPreemption(tc.pod, generalFilter(tc.pod, tc.admitted, node), tc.admitted)
			if fmt.Sprint(plan.Err) != fmt.Sprint(errOrNil(tc.err)) {
				t.Fatalf("err = %v, want %q", plan.Err, tc.err)
			}
			if r := firstFailure(plan.Reasons); r.Reason != tc.reason {
				t.Errorf("remaining reason %q, want %q", r.Reason, tc.reason)
			}
			if podNames(plan.Victims) != tc.victims || plan.Signal != tc.signal {
				t.Errorf("victims %s signal %q, want %s %q", podNames(plan.Victims), plan.Signal, tc.victims, tc.signal)
			}
		})
	}
}
