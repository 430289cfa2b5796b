package agentconfig

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// notImplemented are the top-level fields of upstream's
// kubelet.config.k8s.io/v1beta1 KubeletConfiguration (k8s.io/kubelet
// v0.37.0, config/v1beta1/types.go) that Config does not have, in
// upstream's order. Files written for a kubelet (kubeadm, k3s, cloud node
// images) set many of them; the agent loads such a file, ignores each of
// these fields with one warning naming it, and keeps strict checks for
// the fields it implements. A field the agent comes to implement moves
// from here to Config (TestNotImplementedFields fails until it does).
var notImplemented = []string{
	"httpCheckFrequency",
	"staticPodURL",
	"staticPodURLHeader",
	"tlsCipherSuites",
	"tlsCurvePreferences",
	"tlsMinVersion",
	"imagePullCredentialsVerificationPolicy",
	"preloadedImagesVerificationAllowlist",
	"enableDebuggingHandlers",
	"streamingConnectionIdleTimeout",
	"nodeStatusReportFrequency",
	"nodeLeaseDurationSeconds",
	"kubeletCgroups",
	"systemCgroups",
	"cpuManagerPolicy",
	"singleProcessOOMKill",
	"cpuManagerPolicyOptions",
	"cpuManagerReconcilePeriod",
	"memoryManagerPolicy",
	"topologyManagerPolicy",
	"topologyManagerScope",
	"topologyManagerPolicyOptions",
	"qosReserved",
	"hairpinMode",
	"podCIDR",
	"runOnce",
	"cpuCFSQuota",
	"cpuCFSQuotaPeriod",
	"maxOpenFiles",
	"contentType",
	"podsPerCore",
	"enableControllerAttachDetach",
	"protectKernelDefaults",
	"makeIPTablesUtilChains",
	"iptablesMasqueradeBit",
	"iptablesDropBit",
	"featureGates",
	"failSwapOn",
	"memorySwap",
	"reservedSystemCPUs",
	"showHiddenMetricsForVersion",
	"defaultPodSysctls",
	"volumePluginDir",
	"providerID",
	"kernelMemcgNotification",
	"logging",
	"enableSystemLogHandler",
	"enableSystemLogQuery",
	"shutdownGracePeriod",
	"shutdownGracePeriodCriticalPods",
	"shutdownGracePeriodByPodPriority",
	"crashLoopBackOff",
	"reservedMemory",
	"enableDebugFlagsHandler",
	"memoryThrottlingFactor",
	"memoryReservationPolicy",
	"registerNode",
	"failCgroupV1",
}

// onlyValue is an upstream field the agent does not implement but whose
// ignoring would weaken the node (a check upstream makes that the agent
// would skip, an API it would serve that the file turns off): the agent
// accepts it only at the value that describes what it does, and refuses
// the file otherwise instead of ignoring the field.
type onlyValue struct {
	accept func(v any) bool
	// what is the accepted value, for the error.
	what string
}

var onlyValues = map[string]onlyValue{
	// KEP-2535: the agent never re-verifies credentials of preloaded
	// images, upstream's default policy.
	"imagePullCredentialsVerificationPolicy": {isValue("NeverVerifyPreloadedImages"), `"NeverVerifyPreloadedImages"`},
	"preloadedImagesVerificationAllowlist":   {isEmpty, "an empty list"},
	// The node API server always serves /exec, /attach, /portForward,
	// /containerLogs and /run; a file turning them off is not honoured.
	"enableDebuggingHandlers": {isValue(true), "true"},
}

func isValue(want any) func(any) bool {
	return func(v any) bool { return v == nil || reflect.DeepEqual(v, want) }
}

func isEmpty(v any) bool {
	l, ok := v.([]any)
	return v == nil || ok && len(l) == 0
}

// NotImplementedWarning is the warning for an upstream field the agent
// ignores.
func NotImplementedWarning(field string) string {
	return fmt.Sprintf("field %q of %s %s is not implemented by nodeagent and is ignored", field, APIVersion, Kind)
}

// dropNotImplemented removes from raw the upstream fields the agent does
// not implement: one warning each, or an error for a field in onlyValues
// set to another value.
func dropNotImplemented(raw map[string]json.RawMessage) ([]string, error) {
	var warnings []string
	for _, key := range notImplemented {
		v, ok := raw[key]
		if !ok {
			continue
		}
		delete(raw, key)
		ov, refusable := onlyValues[key]
		if !refusable {
			warnings = append(warnings, NotImplementedWarning(key))
			continue
		}
		var val any
		if err := json.Unmarshal(v, &val); err != nil {
			return nil, fmt.Errorf("field %q: %w", key, err)
		}
		if !ov.accept(val) {
			return nil, fmt.Errorf("field %q: %s is not supported by nodeagent (only %s)", key, v, ov.what)
		}
	}
	return warnings, nil
}
