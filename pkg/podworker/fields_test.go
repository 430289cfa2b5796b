package podworker

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// fieldUse says what the agent does with one field of a pod.
type fieldUse int

const (
	// handled: the agent does what the kubelet does with it.
	handled fieldUse = iota
	// notForNode: the kubelet does not read it either (the API server,
	// the scheduler or controllers own it).
	notForNode
	// gap: the agent accepts it and does not yet do what the kubelet
	// does; issue 14 closes each one (handled, or refused with the
	// kubelet's reason). The list must only shrink.
	gap
)

// maxGaps only goes down: lower it whenever a gap is closed.
const maxGaps = 0

// podFields is the inventory of every field of the pod a kubelet may have
// to act on, keyed "<Type>.<json name>", with where the agent handles it.
// A field Kubernetes adds fails TestPodFieldInventory until it is listed:
// no field is silently ignored by omission.
var podFields = map[string]struct {
	use   fieldUse
	where string
}{
	"PodSpec.volumes":                       {handled, "pkg/volume, criconfig/mounts.go; image volumes: imagevolumes.go pulls, the CRI mounts (containerd 1.6 fails the container)"},
	"PodSpec.initContainers":                {handled, "plan.go, sidecars.go"},
	"PodSpec.containers":                    {handled, "plan.go, execute.go"},
	"PodSpec.ephemeralContainers":           {handled, "ephemeral.go"},
	"PodSpec.restartPolicy":                 {handled, "plan.go, status.go"},
	"PodSpec.terminationGracePeriodSeconds": {handled, "execute.go gracePeriod"},
	"PodSpec.activeDeadlineSeconds":         {handled, "deadline.go"},
	"PodSpec.dnsPolicy":                     {handled, "criconfig/dns.go"},
	"PodSpec.nodeSelector":                  {handled, "admission.go (NodeAffinity predicate)"},
	"PodSpec.serviceAccountName":            {handled, "projected tokens (pkg/volume), downward API"},
	"PodSpec.serviceAccount":                {notForNode, "deprecated alias the API server keeps in step"},
	"PodSpec.automountServiceAccountToken":  {notForNode, "ServiceAccount admission injects the volume or not"},
	"PodSpec.nodeName":                      {handled, "admission.go (NodeName predicate), pod sources"},
	"PodSpec.hostNetwork":                   {handled, "criconfig (namespaces, DNS, pod IPs), /etc/hosts"},
	"PodSpec.hostPID":                       {handled, "criconfig/security.go"},
	"PodSpec.hostIPC":                       {handled, "criconfig/security.go"},
	"PodSpec.shareProcessNamespace":         {handled, "criconfig/security.go"},
	"PodSpec.securityContext":               {handled, "PodSecurityContext fields below"},
	"PodSpec.imagePullSecrets":              {handled, "images.go pullSecrets, pkg/credentialprovider"},
	"PodSpec.hostname":                      {handled, "criconfig/sandbox.go, /etc/hosts"},
	"PodSpec.subdomain":                     {handled, "/etc/hosts FQDN"},
	"PodSpec.affinity":                      {handled, "admission.go (required node affinity); the rest is the scheduler's"},
	"PodSpec.schedulerName":                 {notForNode, "scheduler"},
	"PodSpec.tolerations":                   {handled, "admission.go (NoExecute taints)"},
	"PodSpec.hostAliases":                   {handled, "execute.go writeEtcHosts"},
	"PodSpec.priorityClassName":             {handled, "criconfig/resources.go (system-node-critical and critical: the guaranteed OOM score); Priority admission resolves it into priority"},
	"PodSpec.priority":                      {handled, "preemption.go (critical pod admission: podutil.IsCritical, Preemptable), criconfig/resources.go (node-critical OOM score); eviction order and graceful shutdown: issue 17"},
	"PodSpec.dnsConfig":                     {handled, "criconfig/dns.go"},
	"PodSpec.readinessGates":                {handled, "status.go (Ready condition), apiclient/status.go (gate conditions from the API)"},
	"PodSpec.runtimeClassName":              {handled, "runtimeclass.go (the class's handler to RunPodSandbox), admission RuntimeClass"},
	"PodSpec.enableServiceLinks":            {handled, "criconfig/serviceenv.go (service environment variables)"},
	"PodSpec.preemptionPolicy":              {notForNode, "scheduler"},
	"PodSpec.overhead":                      {handled, "pkg/podcgroup (pod cgroup sizing), the scheduler (requests), admission RuntimeClass"},
	"PodSpec.topologySpreadConstraints":     {notForNode, "scheduler"},
	"PodSpec.setHostnameAsFQDN":             {handled, "criconfig/hostname.go KernelHostname (the FQDN as the sandbox hostname)"},
	"PodSpec.os":                            {handled, "admission.go checkPodOS"},
	"PodSpec.hostUsers":                     {handled, "execute.go checkUserNamespace: false gets no sandbox (FailedCreatePodSandBox) unless the runtime announces user namespaces for the handler; then userns.go and pkg/userns: a block of idsPerPod IDs in the sandbox's and containers' UsernsOptions (mode POD), recorded in the pod dir; else mode NODE"},
	"PodSpec.schedulingGates":               {notForNode, "scheduler"},
	"PodSpec.resourceClaims":                {handled, "refused: execute.go resourceClaimsError (no DRA: no sandbox, FailedPrepareDynamicResources)"},
	"PodSpec.resources":                     {handled, "pkg/podcgroup (pod cgroup limits), podutil.QOSClass"},
	"PodSpec.hostnameOverride":              {handled, "criconfig/hostname.go (sandbox hostname, /etc/hosts), podspec validation_hostname.go"},
	"PodSpec.schedulingGroup":               {notForNode, "scheduler (gang scheduling)"},
	"PodSpec.evictionResponders":            {notForNode, "EvictionRequest responders (controllers)"},

	"PodSecurityContext.seLinuxOptions":           {handled, "criconfig/security.go (sandbox)"},
	"PodSecurityContext.windowsOptions":           {notForNode, "Windows nodes only; ignored on Linux as upstream"},
	"PodSecurityContext.runAsUser":                {handled, "criconfig/security.go"},
	"PodSecurityContext.runAsGroup":               {handled, "criconfig/security.go"},
	"PodSecurityContext.runAsNonRoot":             {handled, "criconfig/security.go, execute.go"},
	"PodSecurityContext.supplementalGroups":       {handled, "criconfig/security.go"},
	"PodSecurityContext.supplementalGroupsPolicy": {handled, "admission.go checkSupplementalGroupsPolicy (Strict refused without runtime support), criconfig"},
	"PodSecurityContext.fsGroup":                  {handled, "pkg/volume/ownership.go, criconfig"},
	"PodSecurityContext.sysctls":                  {handled, "pkg/sysctl (safe set, allowedUnsafeSysctls), admission.go checkSysctls, criconfig"},
	"PodSecurityContext.fsGroupChangePolicy":      {handled, "pkg/volume/ownership.go"},
	"PodSecurityContext.seccompProfile":           {handled, "criconfig/security.go, seccompDefault"},
	"PodSecurityContext.appArmorProfile":          {handled, "admission.go checkAppArmor (refused without AppArmor), criconfig"},
	"PodSecurityContext.seLinuxChangePolicy":      {handled, "MountOption applies only to CSI drivers with seLinuxMount and FC/iSCSI volumes, none served: every volume is relabelled by the runtime (volume.Mounted SELinuxRelabel), as the kubelet does for these types"},

	"SecurityContext.capabilities":             {handled, "criconfig/security.go"},
	"SecurityContext.privileged":               {handled, "criconfig/security.go"},
	"SecurityContext.seLinuxOptions":           {handled, "criconfig/security.go"},
	"SecurityContext.windowsOptions":           {notForNode, "Windows nodes only"},
	"SecurityContext.runAsUser":                {handled, "criconfig/security.go"},
	"SecurityContext.runAsGroup":               {handled, "criconfig/security.go"},
	"SecurityContext.runAsNonRoot":             {handled, "criconfig/security.go, execute.go"},
	"SecurityContext.readOnlyRootFilesystem":   {handled, "criconfig/security.go"},
	"SecurityContext.allowPrivilegeEscalation": {handled, "criconfig/security.go"},
	"SecurityContext.procMount":                {handled, "criconfig/security.go"},
	"SecurityContext.seccompProfile":           {handled, "criconfig/security.go"},
	"SecurityContext.appArmorProfile":          {handled, "admission.go checkAppArmor, criconfig"},

	"Container.name":                     {handled, "everywhere"},
	"Container.image":                    {handled, "images.go"},
	"Container.command":                  {handled, "criconfig/container.go"},
	"Container.args":                     {handled, "criconfig/container.go"},
	"Container.workingDir":               {handled, "criconfig/container.go"},
	"Container.ports":                    {handled, "criconfig/sandbox.go (host ports), probes"},
	"Container.envFrom":                  {handled, "criconfig/envfrom.go"},
	"Container.env":                      {handled, "criconfig/envfrom.go, expand.go"},
	"Container.resources":                {handled, "criconfig/resources.go"},
	"Container.resizePolicy":             {handled, "pods/resize; the agent resizes in place or restarts (resize.go)"},
	"Container.restartPolicy":            {handled, "sidecars.go (init containers), podutil.ContainerShouldRestart (KEP-5307)"},
	"Container.restartPolicyRules":       {handled, "podutil.ContainerShouldRestart: plan.go, status.go, pkg/probe"},
	"Container.volumeMounts":             {handled, "criconfig/mounts.go"},
	"Container.volumeDevices":            {handled, "validated: podspec/validation_volumedevices.go (claims only); refused: pkg/volume (no Block PVs) and criconfig/container.go blockVolumes (no block volume mapper, the kubelet's CreateContainerConfigError)"},
	"Container.livenessProbe":            {handled, "pkg/probe"},
	"Container.readinessProbe":           {handled, "pkg/probe"},
	"Container.startupProbe":             {handled, "pkg/probe"},
	"Container.lifecycle":                {handled, "pkg/lifecycle"},
	"Container.terminationMessagePath":   {handled, "termination.go"},
	"Container.terminationMessagePolicy": {handled, "termination.go"},
	"Container.imagePullPolicy":          {handled, "images.go"},
	"Container.securityContext":          {handled, "SecurityContext fields above"},
	"Container.stdin":                    {handled, "criconfig/container.go"},
	"Container.stdinOnce":                {handled, "criconfig/container.go"},
	"Container.tty":                      {handled, "criconfig/container.go"},
}

// TestPodFieldInventory walks the pod's types by reflection: every field
// must be in podFields, and podFields names no field that is gone.
func TestPodFieldInventory(t *testing.T) {
	seen := map[string]bool{}
	for _, typ := range []reflect.Type{
		reflect.TypeFor[v1.PodSpec](), reflect.TypeFor[v1.PodSecurityContext](),
		reflect.TypeFor[v1.SecurityContext](), reflect.TypeFor[v1.Container](),
	} {
		for i := range typ.NumField() {
			name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
			key := typ.Name() + "." + name
			seen[key] = true
			if _, ok := podFields[key]; !ok {
				t.Errorf("%s is new: say in podFields whether the agent handles it (and where), or refuse it with the kubelet's reason", key)
			}
		}
	}
	// Ephemeral containers share the container's fields.
	ec, c := reflect.TypeFor[v1.EphemeralContainerCommon](), reflect.TypeFor[v1.Container]()
	if ec.NumField() != c.NumField() {
		t.Errorf("EphemeralContainerCommon has %d fields, Container %d: list the difference", ec.NumField(), c.NumField())
	}
	var gone, gaps []string
	for key, f := range podFields {
		if !seen[key] {
			gone = append(gone, key)
		}
		if f.use == gap {
			gaps = append(gaps, key)
		}
	}
	sort.Strings(gone)
	sort.Strings(gaps)
	if len(gone) > 0 {
		t.Errorf("podFields lists fields the API no longer has: %v", gone)
	}
	if len(gaps) > maxGaps {
		t.Errorf("%d gaps, more than the %d known: a field is handled or refused, never a new gap", len(gaps), maxGaps)
	}
	t.Logf("%d fields still accepted without the kubelet's behaviour: %s", len(gaps), strings.Join(gaps, ", "))
}
