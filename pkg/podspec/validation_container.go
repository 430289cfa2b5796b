package podspec

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// podContext carries the pod-wide facts that container checks depend on.
type podContext struct {
	vols        map[string]v1.VolumeSource // valid volumes, by name
	gracePeriod *int64                     // spec.terminationGracePeriodSeconds
	hostUsers   bool                       // false only with spec.hostUsers=false
	// restartPolicy is the pod's: resizePolicy depends on it.
	restartPolicy v1.RestartPolicy
}

var (
	supportedPortProtocols = sets.New(v1.ProtocolTCP, v1.ProtocolUDP, v1.ProtocolSCTP)
	supportedPullPolicies  = sets.New(v1.PullAlways, v1.PullIfNotPresent, v1.PullNever)
	supportedHTTPSchemes   = sets.New(v1.URISchemeHTTP, v1.URISchemeHTTPS)

	// Field paths an env var may take from the downward API
	// (plus subscripted metadata.labels['k'] / metadata.annotations['k']).
	envFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid",
		"spec.nodeName", "spec.serviceAccountName",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	// Every field label the v1 downward API knows at all.
	knownFieldPaths = sets.New("metadata.annotations", "metadata.labels", "metadata.name",
		"metadata.namespace", "metadata.uid", "spec.nodeName", "spec.restartPolicy",
		"spec.serviceAccountName", "spec.schedulerName", "status.phase",
		"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")
	resourceFieldPaths = sets.New("limits.cpu", "limits.memory", "limits.ephemeral-storage",
		"requests.cpu", "requests.memory", "requests.ephemeral-storage")
	byteDivisors = sets.New("1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei")
)

func validateContainers(containers []v1.Container, ctx podContext, fldPath *field.Path) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c, p := &containers[i], fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, ctx, p)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		}
		names.Insert(c.Name)
		allErrs = append(allErrs, validateLifecycleAndProbes(c, ctx.gracePeriod, p)...)
		allErrs = append(allErrs, validateContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
	}
	// App containers run together, so their host ports must not collide.
	return append(allErrs, checkHostPortConflicts(containers, fldPath)...)
}

func validateInitContainers(inits, regular []v1.Container, ctx podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range inits {
		c, p := &inits[i], fldPath.Index(i)
		allErrs = append(allErrs, validateContainerCommon(c, ctx, p)...)
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		allErrs = append(allErrs, validateInitContainerRestartPolicy(c.RestartPolicy, c.RestartPolicyRules, p)...)
		if names.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		// Init containers run one by one, so only conflicts within one count.
		// (Upstream reports these at index 0 whatever the container's index.)
		allErrs = append(allErrs, checkHostPortConflicts([]v1.Container{*c}, fldPath)...)
		if sidecar {
			allErrs = append(allErrs, validateLifecycleAndProbes(c, ctx.gracePeriod, p)...)
			continue
		}
		const msg = "may not be set for init containers without restartPolicy=Always"
		for _, f := range []setField{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(p.Child(f.name), msg))
			}
		}
	}
	return allErrs
}

func validateEphemeralContainers(spec *v1.PodSpec, ctx podContext, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	targets, names := sets.New[string](), sets.New[string]()
	for _, c := range append(slices.Clone(spec.Containers), spec.InitContainers...) {
		targets.Insert(c.Name)
		names.Insert(c.Name)
	}
	for i := range spec.EphemeralContainers {
		ec, p := &spec.EphemeralContainers[i], fldPath.Index(i)
		c := (*v1.Container)(&ec.EphemeralContainerCommon)
		allErrs = append(allErrs, validateContainerCommon(c, ctx, p)...)
		allErrs = append(allErrs, validateImageWhitespace(c.Image, p.Child("image"))...)
		if names.Has(ec.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), ec.Name))
		}
		names.Insert(ec.Name)
		if ec.TargetContainerName != "" && !targets.Has(ec.TargetContainerName) {
			allErrs = append(allErrs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
		// Ephemeral containers are for debugging: nothing the pod relies on.
		const msg = "cannot be set for an Ephemeral Container"
		for _, f := range []setField{
			{"ports", len(c.Ports) > 0}, {"resources", !isZeroResources(c.Resources)},
			{"resizePolicy", len(c.ResizePolicy) > 0}, {"restartPolicy", c.RestartPolicy != nil},
			{"restartPolicyRules", len(c.RestartPolicyRules) > 0}, {"livenessProbe", c.LivenessProbe != nil},
			{"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil},
			{"lifecycle", c.Lifecycle != nil},
		} {
			if f.set {
				allErrs = append(allErrs, field.Forbidden(p.Child(f.name), msg))
			}
		}
		for j, m := range c.VolumeMounts {
			if m.SubPath != "" {
				allErrs = append(allErrs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPath"), msg))
			}
			if m.SubPathExpr != "" {
				allErrs = append(allErrs, field.Forbidden(p.Child("volumeMounts").Index(j).Child("subPathExpr"), msg))
			}
		}
	}
	return allErrs
}

// Container restart rules (KEP-5307, ContainerRestartRules on by default).
// RestartAllContainers is an action only with the alpha
// RestartAllContainersOnContainerExits gate, which this API server leaves
// off (as upstream's default before it went beta), so only Restart is
// accepted, and a sidecar takes no rules.
const (
	maxRestartPolicyRules   = 20
	maxRestartRuleExitCodes = 255
)

var (
	supportedContainerRestartPolicies = sets.New(v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicyNever, v1.ContainerRestartPolicyOnFailure)
	supportedRestartRuleActions       = sets.New(v1.ContainerRestartRuleActionRestart)
	supportedRestartRuleOperators     = sets.New(v1.ContainerRestartRuleOnExitCodesOpIn, v1.ContainerRestartRuleOnExitCodesOpNotIn)
)

// validateContainerRestartPolicy checks a container's own restartPolicy
// and its rules, for app containers and init containers that are no
// sidecars.
func validateContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case policy == nil && len(rules) == 0:
		return nil
	case policy == nil:
		allErrs = append(allErrs, field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used"))
	case !supportedContainerRestartPolicies.Has(*policy):
		allErrs = append(allErrs, field.NotSupported(p.Child("restartPolicy"), *policy, sets.List(supportedContainerRestartPolicies)))
	}
	rulesPath := p.Child("restartPolicyRules")
	if len(rules) > maxRestartPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxRestartPolicyRules))
	}
	for i, r := range rules {
		rp := rulesPath.Index(i)
		if !supportedRestartRuleActions.Has(r.Action) {
			allErrs = append(allErrs, field.NotSupported(rp.Child("action"), r.Action, sets.List(supportedRestartRuleActions)))
		}
		if r.ExitCodes == nil {
			allErrs = append(allErrs, field.Required(rp.Child("exitCodes"), "must be specified"))
			continue
		}
		ep := rp.Child("exitCodes")
		if !supportedRestartRuleOperators.Has(r.ExitCodes.Operator) {
			allErrs = append(allErrs, field.NotSupported(ep.Child("operator"), r.ExitCodes.Operator, sets.List(supportedRestartRuleOperators)))
		}
		if len(r.ExitCodes.Values) > maxRestartRuleExitCodes {
			allErrs = append(allErrs, field.TooMany(ep.Child("values"), len(r.ExitCodes.Values), maxRestartRuleExitCodes))
		}
	}
	return allErrs
}

// validateInitContainerRestartPolicy: Always makes a sidecar, which takes no
// rules; Never and OnFailure override the pod's policy for this init
// container.
func validateInitContainerRestartPolicy(policy *v1.ContainerRestartPolicy, rules []v1.ContainerRestartRule, p *field.Path) field.ErrorList {
	switch {
	case policy == nil && len(rules) > 0:
		return field.ErrorList{field.Required(p.Child("restartPolicy"), "must specify restartPolicy when restart rules are used")}
	case policy == nil:
		return nil
	case *policy == v1.ContainerRestartPolicyAlways && len(rules) > 0:
		return field.ErrorList{field.Forbidden(p.Child("restartPolicyRules"), "restartPolicyRules are not allowed for init containers with restart policy Always")}
	case *policy == v1.ContainerRestartPolicyAlways:
		return nil
	}
	return validateContainerRestartPolicy(policy, rules, p)
}

// setField names a field and says whether it is set.
type setField struct {
	name string
	set  bool
}

func isZeroResources(r v1.ResourceRequirements) bool {
	return len(r.Limits) == 0 && len(r.Requests) == 0 && len(r.Claims) == 0
}

// validateContainerCommon holds the checks shared by every kind of container.
func validateContainerCommon(c *v1.Container, ctx podContext, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if c.Name == "" {
		allErrs = append(allErrs, field.Required(p.Child("name"), ""))
	} else {
		allErrs = append(allErrs, dnsLabel(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		allErrs = append(allErrs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError:
	case "":
		allErrs = append(allErrs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]v1.TerminationMessagePolicy{v1.TerminationMessageReadFile, v1.TerminationMessageFallbackToLogsOnError}))
	}
	allErrs = append(allErrs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	allErrs = append(allErrs, validateEnv(c.Env, p.Child("env"))...)
	allErrs = append(allErrs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	allErrs = append(allErrs, validateVolumeMounts(c, ctx.vols, p.Child("volumeMounts"))...)
	allErrs = append(allErrs, validateVolumeDevices(c, ctx.vols, p.Child("volumeDevices"))...)
	allErrs = append(allErrs, validatePullPolicy(c.ImagePullPolicy, p.Child("imagePullPolicy"))...)
	allErrs = append(allErrs, validateResources(&c.Resources, p.Child("resources"))...)
	allErrs = append(allErrs, validateResizePolicy(c.ResizePolicy, ctx.restartPolicy, p.Child("resizePolicy"))...)
	return append(allErrs, validateSecurityContext(c.SecurityContext, ctx.hostUsers, p.Child("securityContext"))...)
}

// validateImageWhitespace is a pod-only check (templates may use " ").
func validateImageWhitespace(image string, p *field.Path) field.ErrorList {
	if len(image) != len(strings.TrimSpace(image)) {
		return field.ErrorList{field.Invalid(p, image, "must not have leading or trailing whitespace")}
	}
	return nil
}

func validatePullPolicy(policy v1.PullPolicy, p *field.Path) field.ErrorList {
	switch {
	case policy == "":
		return field.ErrorList{field.Required(p, "")}
	case !supportedPullPolicies.Has(policy):
		return field.ErrorList{field.NotSupported(p, policy, sets.List(supportedPullPolicies))}
	}
	return nil
}

func validateContainerPorts(ports []v1.ContainerPort, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fldPath.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					allErrs = append(allErrs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				allErrs = append(allErrs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			allErrs = append(allErrs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				allErrs = append(allErrs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.Protocol == "" {
			allErrs = append(allErrs, field.Required(p.Child("protocol"), ""))
		} else if !supportedPortProtocols.Has(port.Protocol) {
			allErrs = append(allErrs, field.NotSupported(p.Child("protocol"), port.Protocol, sets.List(supportedPortProtocols)))
		}
	}
	return allErrs
}

// checkHostPortConflicts reports host ports bound twice (same protocol and IP).
func checkHostPortConflicts(containers []v1.Container, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				allErrs = append(allErrs, field.Duplicate(fldPath.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			}
			seen.Insert(key)
		}
	}
	return allErrs
}

func validateEnv(env []v1.EnvVar, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, ev := range env {
		p := fldPath.Index(i)
		if ev.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else {
			// Printable ASCII except '=' (RelaxedEnvironmentVariableValidation, GA).
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				allErrs = append(allErrs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		allErrs = append(allErrs, validateEnvValueFrom(ev, p.Child("valueFrom"))...)
	}
	return allErrs
}

func validateEnvValueFrom(ev v1.EnvVar, p *field.Path) field.ErrorList {
	vf := ev.ValueFrom
	if vf == nil {
		return nil
	}
	var allErrs field.ErrorList
	n := 0
	if vf.FieldRef != nil {
		n++
		allErrs = append(allErrs, validateFieldRef(vf.FieldRef, envFieldPaths, p.Child("fieldRef"))...)
	}
	if vf.ResourceFieldRef != nil {
		n++
		allErrs = append(allErrs, validateResourceFieldRef(vf.ResourceFieldRef, p.Child("resourceFieldRef"), false)...)
	}
	if s := vf.ConfigMapKeyRef; s != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(s.Name, s.Key, p.Child("configMapKeyRef"))...)
	}
	if s := vf.SecretKeyRef; s != nil {
		n++
		allErrs = append(allErrs, validateKeySelector(s.Name, s.Key, p.Child("secretKeyRef"))...)
	}
	if vf.FileKeyRef != nil {
		n++ // alpha (EnvFiles); counted, not validated further
	}
	switch {
	case n == 0:
		allErrs = append(allErrs, field.Invalid(p, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		allErrs = append(allErrs, field.Invalid(p, "", "may not be specified when `value` is not empty"))
	case n > 1:
		allErrs = append(allErrs, field.Invalid(p, "", "may not have more than one field specified at a time"))
	}
	return allErrs
}

func validateKeySelector(name, key string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, false) {
		allErrs = append(allErrs, field.Invalid(p.Child("name"), name, msg))
	}
	if key == "" {
		return append(allErrs, field.Required(p.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		allErrs = append(allErrs, field.Invalid(p.Child("key"), key, msg))
	}
	return allErrs
}

// validateFieldRef checks a downward API field selector against the paths
// allowed where it is used; the messages mirror upstream's conversion errors.
func validateFieldRef(fs *v1.ObjectFieldSelector, allowed sets.Set[string], p *field.Path) field.ErrorList {
	if fs.APIVersion == "" {
		return field.ErrorList{field.Required(p.Child("apiVersion"), "")}
	}
	if fs.FieldPath == "" {
		return field.ErrorList{field.Required(p.Child("fieldPath"), "")}
	}
	convErr := func(format string, args ...any) field.ErrorList {
		return field.ErrorList{field.Invalid(p.Child("fieldPath"), fs.FieldPath, "error converting fieldPath: "+fmt.Sprintf(format, args...))}
	}
	if fs.APIVersion != "v1" {
		return convErr("unsupported pod version: %s", fs.APIVersion)
	}
	if path, key, ok := splitSubscript(fs.FieldPath); ok {
		switch path {
		case "metadata.annotations":
			return qualifiedName(strings.ToLower(key), p)
		case "metadata.labels":
			return qualifiedName(key, p)
		}
		return convErr("field label does not support subscript: %s", fs.FieldPath)
	}
	path := fs.FieldPath
	if path == "spec.host" { // old clients' name for spec.nodeName
		path = "spec.nodeName"
	}
	if !knownFieldPaths.Has(path) {
		return convErr("field label not supported: %s", fs.FieldPath)
	}
	if !allowed.Has(path) {
		return field.ErrorList{field.NotSupported(p.Child("fieldPath"), path, sets.List(allowed))}
	}
	return nil
}

// splitSubscript splits "metadata.labels['key']" into its path and key.
func splitSubscript(fieldPath string) (path, key string, ok bool) {
	s, found := strings.CutSuffix(fieldPath, "']")
	if !found {
		return "", "", false
	}
	path, key, ok = strings.Cut(s, "['")
	return path, key, ok && path != ""
}

func validateResourceFieldRef(fs *v1.ResourceFieldSelector, p *field.Path, inVolume bool) field.ErrorList {
	var allErrs field.ErrorList
	res := fs.Resource
	hugePages := strings.HasPrefix(res, "requests.hugepages-") || strings.HasPrefix(res, "limits.hugepages-")
	switch {
	case inVolume && fs.ContainerName == "":
		allErrs = append(allErrs, field.Required(p.Child("containerName"), ""))
	case res == "":
		allErrs = append(allErrs, field.Required(p.Child("resource"), ""))
	case !resourceFieldPaths.Has(res) && !hugePages:
		allErrs = append(allErrs, field.NotSupported(p.Child("resource"), res, sets.List(resourceFieldPaths)))
	}
	if fs.Divisor.IsZero() {
		return allErrs
	}
	d, kind := fs.Divisor.String(), ""
	switch {
	case res == "limits.cpu" || res == "requests.cpu":
		if d != "1m" && d != "1" {
			allErrs = append(allErrs, field.Invalid(p.Child("divisor"), res, "only divisor's values 1m and 1 are supported with the cpu resource"))
		}
	case res == "limits.memory" || res == "requests.memory":
		kind = "memory"
	case res == "limits.ephemeral-storage" || res == "requests.ephemeral-storage":
		kind = "local ephemeral storage"
	case hugePages:
		kind = "hugepages"
	}
	if kind != "" && !byteDivisors.Has(d) {
		allErrs = append(allErrs, field.Invalid(p.Child("divisor"), res, fmt.Sprintf(
			"only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the %s resource", kind)))
	}
	return allErrs
}

func validateEnvFrom(sources []v1.EnvFromSource, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, src := range sources {
		p := fldPath.Index(i)
		if src.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(src.Prefix) {
				allErrs = append(allErrs, field.Invalid(p.Child("prefix"), src.Prefix, msg))
			}
		}
		n := 0
		if src.ConfigMapRef != nil {
			n++
			allErrs = append(allErrs, validateEnvSourceName(src.ConfigMapRef.Name, p.Child("configMapRef", "name"))...)
		}
		if src.SecretRef != nil {
			n++
			allErrs = append(allErrs, validateEnvSourceName(src.SecretRef.Name, p.Child("secretRef", "name"))...)
		}
		// Upstream reports these two on the envFrom list, not the item.
		if n == 0 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if n > 1 {
			allErrs = append(allErrs, field.Invalid(fldPath, "", "may not have more than one field specified at a time"))
		}
	}
	return allErrs
}

func validateEnvSourceName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, true) {
		allErrs = append(allErrs, field.Invalid(p, name, msg))
	}
	return allErrs
}

// validateResources checks names and quantities, and that requests do not
// exceed limits (or equal them, for resources that cannot be overcommitted).
func validateResources(r *v1.ResourceRequirements, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	limPath, reqPath := fldPath.Child("limits"), fldPath.Child("requests")
	cpuOrMemory, hugePages := false, false
	note := func(name v1.ResourceName) {
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hugePages = hugePages || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
	}
	for _, name := range sortedNames(r.Limits) {
		allErrs = append(allErrs, validateResourceEntry(name, r.Limits[name], limPath.Key(string(name)))...)
		note(name)
	}
	for _, name := range sortedNames(r.Requests) {
		q := r.Requests[name]
		allErrs = append(allErrs, validateResourceEntry(name, q, reqPath.Key(string(name)))...)
		note(name)
		limit, hasLimit := r.Limits[name]
		switch {
		case hasLimit && q.Cmp(limit) != 0 && !overcommitAllowed(name):
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, limit.String())))
		case hasLimit && q.Cmp(limit) > 0:
			allErrs = append(allErrs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		case !hasLimit && !overcommitAllowed(name):
			allErrs = append(allErrs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	if hugePages && !cpuOrMemory {
		allErrs = append(allErrs, field.Forbidden(fldPath, "HugePages require cpu or memory"))
	}
	return allErrs
}

var standardContainerResources = sets.New(v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage)

func validateResourceEntry(name v1.ResourceName, q resource.Quantity, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(string(name)) {
		allErrs = append(allErrs, field.Invalid(p, name, msg))
	}
	switch {
	case !strings.Contains(string(name), "/"):
		if !standardContainerResources.Has(name) && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			allErrs = append(allErrs, field.Invalid(p, name, "must be a standard resource for containers"))
		}
	case !isNativeResource(name) && len(validation.IsQualifiedName("requests."+string(name))) != 0:
		allErrs = append(allErrs, field.Invalid(p, name, "doesn't follow extended resource name standard"))
	}
	if q.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(p, q.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if !isNativeResource(name) && q.MilliValue()%1000 != 0 {
		allErrs = append(allErrs, field.Invalid(p, q, "must be an integer"))
	}
	return allErrs
}

// isNativeResource: unprefixed, or in the kubernetes.io domain.
func isNativeResource(name v1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), "kubernetes.io/")
}

// Extended resources and huge pages cannot be overcommitted.
func overcommitAllowed(name v1.ResourceName) bool {
	return isNativeResource(name) && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

func sortedNames(list v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func validateLifecycleAndProbes(c *v1.Container, grace *int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if lc := c.Lifecycle; lc != nil {
		if h := lc.PostStart; h != nil {
			allErrs = append(allErrs, validateHandler(handler{h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep}, grace, p.Child("lifecycle", "postStart"))...)
		}
		if h := lc.PreStop; h != nil {
			allErrs = append(allErrs, validateHandler(handler{h.Exec, h.HTTPGet, h.TCPSocket, nil, h.Sleep}, grace, p.Child("lifecycle", "preStop"))...)
		}
	}
	for i, pr := range []*v1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		name := []string{"livenessProbe", "readinessProbe", "startupProbe"}[i]
		pp := p.Child(name)
		allErrs = append(allErrs, validateProbe(pr, grace, pp)...)
		if name != "readinessProbe" && pr.SuccessThreshold != 1 {
			allErrs = append(allErrs, field.Invalid(pp.Child("successThreshold"), pr.SuccessThreshold, "must be 1"))
		}
		if name == "readinessProbe" && pr.TerminationGracePeriodSeconds != nil {
			allErrs = append(allErrs, field.Invalid(pp.Child("terminationGracePeriodSeconds"), pr.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
	}
	return allErrs
}

func validateProbe(pr *v1.Probe, grace *int64, p *field.Path) field.ErrorList {
	h := pr.ProbeHandler
	allErrs := validateHandler(handler{h.Exec, h.HTTPGet, h.TCPSocket, h.GRPC, nil}, grace, p)
	for _, f := range []struct {
		name  string
		value int32
	}{{"initialDelaySeconds", pr.InitialDelaySeconds}, {"timeoutSeconds", pr.TimeoutSeconds},
		{"periodSeconds", pr.PeriodSeconds}, {"successThreshold", pr.SuccessThreshold}, {"failureThreshold", pr.FailureThreshold}} {
		allErrs = append(allErrs, apimachineryvalidation.ValidateNonnegativeField(int64(f.value), p.Child(f.name))...)
	}
	if t := pr.TerminationGracePeriodSeconds; t != nil && *t <= 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("terminationGracePeriodSeconds"), *t, "must be greater than 0"))
	}
	return allErrs
}

// handler is what probes and lifecycle hooks have in common.
type handler struct {
	exec    *v1.ExecAction
	httpGet *v1.HTTPGetAction
	tcp     *v1.TCPSocketAction
	grpc    *v1.GRPCAction
	sleep   *v1.SleepAction
}

// validateHandler requires exactly one action and checks it.
func validateHandler(h handler, grace *int64, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	n := 0
	check := func(set bool, name string, errs func(*field.Path) field.ErrorList) {
		if !set {
			return
		}
		if n++; n > 1 {
			allErrs = append(allErrs, field.Forbidden(p.Child(name), "may not specify more than 1 handler type"))
			return
		}
		allErrs = append(allErrs, errs(p.Child(name))...)
	}
	check(h.exec != nil, "exec", func(p *field.Path) field.ErrorList {
		if len(h.exec.Command) == 0 {
			return field.ErrorList{field.Required(p.Child("command"), "")}
		}
		return nil
	})
	check(h.httpGet != nil, "httpGet", func(p *field.Path) field.ErrorList {
		var errs field.ErrorList
		if h.httpGet.Path == "" {
			errs = append(errs, field.Required(p.Child("path"), ""))
		}
		errs = append(errs, validatePortNumOrName(h.httpGet.Port, p.Child("port"))...)
		if !supportedHTTPSchemes.Has(h.httpGet.Scheme) {
			errs = append(errs, field.NotSupported(p.Child("scheme"), h.httpGet.Scheme, sets.List(supportedHTTPSchemes)))
		}
		for _, header := range h.httpGet.HTTPHeaders {
			for _, msg := range validation.IsHTTPHeaderName(header.Name) {
				errs = append(errs, field.Invalid(p.Child("httpHeaders"), header.Name, msg))
			}
		}
		return errs
	})
	check(h.tcp != nil, "tcpSocket", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(h.tcp.Port, p.Child("port"))
	})
	check(h.grpc != nil, "grpc", func(p *field.Path) field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(h.grpc.Port), p.Child("port"))
	})
	check(h.sleep != nil, "sleep", func(p *field.Path) field.ErrorList {
		if s := h.sleep.Seconds; grace != nil && (s < 0 || s > *grace) {
			return field.ErrorList{field.Invalid(p, s, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace))}
		}
		return nil
	})
	if n == 0 {
		allErrs = append(allErrs, field.Required(p, "must specify a handler type"))
	}
	return allErrs
}

func validatePortNumOrName(port intstr.IntOrString, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if port.Type == intstr.String {
		for _, msg := range validation.IsValidPortName(port.StrVal) {
			allErrs = append(allErrs, field.Invalid(p, port.StrVal, msg))
		}
		return allErrs
	}
	for _, msg := range validation.IsValidPortNum(port.IntValue()) {
		allErrs = append(allErrs, field.Invalid(p, port.IntValue(), msg))
	}
	return allErrs
}
