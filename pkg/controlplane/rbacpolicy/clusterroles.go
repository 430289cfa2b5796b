package rbacpolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// Names of the roles other packages and tests refer to.
const (
	ClusterAdmin        = "cluster-admin"
	Admin               = "admin"
	Edit                = "edit"
	View                = "view"
	SystemNode          = "system:node"
	SystemKubeScheduler = "system:kube-scheduler"
)

// clusterRole is a bootstrap ClusterRole.
func clusterRole(name string, labels []string, rs ...*ruleBuilder) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: defaultMeta(name, labels...), Rules: rules(rs...)}
}

// aggregatedRole is a ClusterRole whose rules the aggregation controller
// fills in from the roles labelled selectKey=true.
func aggregatedRole(name, selectKey string, labels ...string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: defaultMeta(name, labels...), AggregationRule: aggregation(selectKey)}
}

// clusterRoles are upstream's ClusterRoles() (policy.go) with v1.37's
// default feature gates: DynamicResourceAllocation (GA),
// KubeletServiceAccountTokenForCredentialProviders,
// KubeletFineGrainedAuthz and MultiCIDRServiceAllocator are on;
// ClusterTrustBundle, PodCertificateRequest, CoordinatedLeaderElection,
// ComponentFlagz/Statusz and DRADeviceTaints are off.
func clusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		// the role that may do anything
		clusterRole(ClusterAdmin, nil,
			newRule("*").groups("*").resources("*"),
			newRule("*").urls("*")),
		// enough to learn whether the server is ready and which APIs it serves
		clusterRole("system:discovery", nil,
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")),
		clusterRole("system:monitoring", nil,
			newRule("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*", "/flagz", "/statusz"),
			// the kubelets' metrics
			newRule("get").groups(legacyGroup).resources("nodes/metrics")),
		// enough for a user to learn about themselves
		clusterRole("system:basic-user", nil,
			newRule("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			newRule("create").groups(authenticationGroup).resources("selfsubjectreviews")),
		// what may be shown to anyone, authenticated or not
		clusterRole("system:public-info-viewer", nil,
			newRule("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/")),

		aggregatedRole(Admin, aggregateToAdmin),
		aggregatedRole(Edit, aggregateToEdit, aggregateToAdmin, "true"),
		aggregatedRole(View, aggregateToView, aggregateToEdit, "true"),
		clusterRole("system:aggregate-to-admin", []string{aggregateToAdmin, "true"}, aggregateToAdminRules()...),
		clusterRole("system:aggregate-to-edit", []string{aggregateToEdit, "true"}, aggregateToEditRules()...),
		clusterRole("system:aggregate-to-view", []string{aggregateToView, "true"}, aggregateToViewRules()...),

		clusterRole("system:heapster", nil,
			newRule(read...).groups(legacyGroup).resources("events", "pods", "nodes", "namespaces"),
			newRule(read...).groups(extensionsGroup).resources("deployments")),
		clusterRole(SystemNode, nil, nodeRules()...),
		clusterRole("system:node-problem-detector", nil,
			newRule("get").groups(legacyGroup).resources("nodes"),
			newRule("patch").groups(legacyGroup).resources("nodes/status"),
			eventsRule()),
		clusterRole("system:node-proxier", nil,
			newRule("list", "watch").groups(legacyGroup).resources("services", "endpoints"),
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			eventsRule(),
			newRule("list", "watch").groups(networkingGroup).resources("servicecidrs"),
			newRule("list", "watch").groups(discoveryGroup).resources("endpointslices")),
		clusterRole("system:kubelet-api-admin", nil,
			newRule("get", "list", "watch").groups(legacyGroup).resources("nodes"),
			newRule("proxy").groups(legacyGroup).resources("nodes"),
			newRule("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"),
			newRule("*").groups(legacyGroup).resources("nodes/pods", "nodes/healthz", "nodes/configz")),
		clusterRole("system:node-bootstrapper", nil,
			newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests")),
		clusterRole("system:auth-delegator", nil,
			newRule("create").groups(authenticationGroup).resources("tokenreviews"),
			newRule("create").groups(authorizationGroup).resources("subjectaccessreviews")),
		clusterRole("system:kube-aggregator", nil,
			newRule(read...).groups(legacyGroup).resources("services", "endpoints")),
		clusterRole("system:kube-controller-manager", nil,
			eventsRule(),
			newRule("create").groups(coordinationGroup).resources("leases"),
			newRule("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager"),
			newRule("create").groups(legacyGroup).resources("secrets", "serviceaccounts"),
			newRule("delete").groups(legacyGroup).resources("secrets"),
			newRule("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps"),
			newRule("update").groups(legacyGroup).resources("secrets", "serviceaccounts"),
			newRule("create").groups(authenticationGroup).resources("tokenreviews"),
			newRule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
			newRule("list", "watch").groups("*").resources("*"),
			newRule("create").groups(legacyGroup).resources("serviceaccounts/token")),
		clusterRole(SystemKubeScheduler, nil, kubeSchedulerRules()...),
		clusterRole("system:kube-dns", nil,
			newRule("list", "watch").groups(legacyGroup).resources("endpoints", "services")),
		clusterRole("system:persistent-volume-provisioner", nil,
			newRule("get", "list", "watch", "create", "delete").groups(legacyGroup).resources("persistentvolumes"),
			newRule("get", "list", "watch", "update").groups(legacyGroup).resources("persistentvolumeclaims"),
			newRule(read...).groups(storageGroup).resources("storageclasses"),
			newRule("watch").groups(legacyGroup).resources("events"),
			eventsRule()),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient", nil,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", nil,
			newRule("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient")),
		clusterRole("system:volume-scheduler", nil,
			newRule(readUpdate...).groups(legacyGroup).resources("persistentvolumes"),
			newRule(read...).groups(storageGroup).resources("storageclasses"),
			newRule(readUpdate...).groups(legacyGroup).resources("persistentvolumeclaims")),
		signerApprover("kubernetes.io/legacy-unknown", "legacy-unknown"),
		signerApprover("kubernetes.io/kubelet-serving", "kubelet-serving"),
		signerApprover("kubernetes.io/kube-apiserver-client", "kube-apiserver-client"),
		signerApprover("kubernetes.io/kube-apiserver-client-kubelet", "kube-apiserver-client-kubelet"),
		clusterRole("system:service-account-issuer-discovery", nil,
			newRule("get").urls("/.well-known/openid-configuration", "/.well-known/openid-configuration/",
				"/openid/v1/jwks", "/openid/v1/jwks/")),
		// ClusterTrustBundle (on in v1.37)
		clusterRole("system:cluster-trust-bundle-discovery", nil,
			newRule(read...).groups(certificatesGroup).resources("clustertrustbundles")),
	}
}

// signerApprover may approve requests for one signer.
func signerApprover(signer, short string) rbacv1.ClusterRole {
	return clusterRole("system:certificates.k8s.io:"+short+"-approver", nil,
		newRule("approve").groups(certificatesGroup).resources("signers").names(signer))
}

// aggregateToAdminRules are what admin has beyond edit: granting.
func aggregateToAdminRules() []*ruleBuilder {
	return []*ruleBuilder{
		newRule("create").groups(authorizationGroup).resources("localsubjectaccessreviews"),
		newRule(readWrite...).groups(rbacGroup).resources("roles", "rolebindings"),
	}
}

// aggregateToEditRules: every user-level action in a namespace, without
// the powers over the namespace itself (status, quota, limits) and
// without granting (no roles or bindings).
func aggregateToEditRules() []*ruleBuilder {
	return []*ruleBuilder{
		// reading the escalating resources
		newRule(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
		newRule("impersonate").groups(legacyGroup).resources("serviceaccounts"),
		newRule(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		newRule("create").groups(legacyGroup).resources("pods/eviction"),
		newRule(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets"),
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		newRule(write...).groups(legacyGroup, eventsGroup).resources("events"),
		newRule(write...).groups(appsGroup).resources("statefulsets", "statefulsets/scale", "daemonsets",
			"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale"),
		newRule(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers"),
		newRule(write...).groups(batchGroup).resources("jobs", "cronjobs"),
		newRule(write...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
			"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
		newRule(write...).groups(policyGroup).resources("poddisruptionbudgets"),
		newRule(write...).groups(networkingGroup).resources("networkpolicies", "ingresses"),
		newRule(readWrite...).groups(coordinationGroup).resources("leases"),
		newRule(write...).groups(resourceGroup).resources("resourceclaims", "resourceclaimtemplates"),
	}
}

// aggregateToViewRules: reading the non-escalating resources of a
// namespace (no secrets, no pods/exec and its kin).
func aggregateToViewRules() []*ruleBuilder {
	return []*ruleBuilder{
		newRule(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		newRule(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		// reading namespaces at namespace scope reads this namespace: it
		// tells users which namespaces they have access to
		newRule(read...).groups(legacyGroup).resources("namespaces"),
		newRule(read...).groups(legacyGroup, eventsGroup).resources("events"),
		newRule(read...).groups(discoveryGroup).resources("endpointslices"),
		newRule(read...).groups(appsGroup).resources("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
			"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
			"replicasets", "replicasets/status", "replicasets/scale"),
		newRule(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		newRule(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status"),
		newRule(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale",
			"deployments/status", "ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
			"replicationcontrollers/scale", "networkpolicies"),
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status"),
		newRule(read...).groups(networkingGroup).resources("ingresses", "ingresses/status", "networkpolicies"),
		newRule(read...).groups(resourceGroup).resources("resourceclaims", "resourceclaims/status", "resourceclaimtemplates"),
	}
}

// nodeRules are upstream's NodeRules(): what kubelets need. The node
// authorizer narrows most of them to the node's own objects; the
// NodeRestriction admission plugin narrows the writes.
func nodeRules() []*ruleBuilder {
	return []*ruleBuilder{
		// checking API access (non-mutating creates)
		newRule("create").groups(authenticationGroup).resources("tokenreviews"),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews"),
		// the service lister behind the service environment variables
		newRule(read...).groups(legacyGroup).resources("services"),
		// registering the Node and reporting its status
		newRule("create", "get", "list", "watch").groups(legacyGroup).resources("nodes"),
		newRule("update", "patch").groups(legacyGroup).resources("nodes/status"),
		newRule("update", "patch").groups(legacyGroup).resources("nodes"),
		newRule("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events"),
		newRule(read...).groups(legacyGroup).resources("pods"),
		// mirror pods
		newRule("create", "delete").groups(legacyGroup).resources("pods"),
		newRule("update", "patch").groups(legacyGroup).resources("pods/status"),
		newRule("create").groups(legacyGroup).resources("pods/eviction"),
		// pull secrets, secret and config map volumes and environment
		newRule("get", "list", "watch").groups(legacyGroup).resources("secrets", "configmaps"),
		newRule("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		newRule("get").groups(legacyGroup).resources("endpoints"),
		// rotating its own client certificate
		newRule("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests"),
		newRule("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases"),
		newRule("get").groups(storageGroup).resources("volumeattachments"),
		// projected service account tokens
		newRule("create").groups(legacyGroup).resources("serviceaccounts/token"),
		newRule("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status"),
		newRule("get", "watch", "list").groups(storageGroup).resources("csidrivers"),
		newRule("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes"),
		newRule("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses"),
		// DynamicResourceAllocation
		newRule("get").groups(resourceGroup).resources("resourceclaims"),
		newRule("deletecollection").groups(resourceGroup).resources("resourceslices"),
		// ClusterTrustBundle (pemTrustAnchors volumes)
		newRule("get", "list", "watch").groups(certificatesGroup).resources("clustertrustbundles"),
		// KubeletServiceAccountTokenForCredentialProviders
		newRule("get").groups(legacyGroup).resources("serviceaccounts"),
		// PodCertificateRequest (podCertificate volumes)
		newRule("get", "list", "watch", "create").groups(certificatesGroup).resources("podcertificaterequests"),
	}
}

// kubeSchedulerRules are the rules of system:kube-scheduler.
func kubeSchedulerRules() []*ruleBuilder {
	return []*ruleBuilder{
		eventsRule(),
		// leader election
		newRule("create").groups(coordinationGroup).resources("leases"),
		newRule("get", "update", "list", "watch").groups(coordinationGroup).resources("leases").names("kube-scheduler"),
		newRule(readWrite...).groups(coordinationGroup).resources("leasecandidates"),
		// the scheduler's caches
		newRule(read...).groups(legacyGroup).resources("nodes"),
		newRule("get", "list", "watch", "delete").groups(legacyGroup).resources("pods"),
		newRule("create").groups(legacyGroup).resources("pods/binding", "bindings"),
		newRule("patch", "update").groups(legacyGroup).resources("pods/status"),
		// the spreading priorities
		newRule(read...).groups(legacyGroup).resources("replicationcontrollers", "services"),
		newRule(read...).groups(appsGroup, extensionsGroup).resources("replicasets"),
		newRule(read...).groups(appsGroup).resources("statefulsets"),
		// preemption
		newRule(read...).groups(policyGroup).resources("poddisruptionbudgets"),
		// volumes
		newRule(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes"),
		// authentication and authorization delegation of its own port
		newRule("create").groups(authenticationGroup).resources("tokenreviews"),
		newRule("create").groups(authorizationGroup).resources("subjectaccessreviews"),
		// CSI volume limits and topology
		newRule(read...).groups(storageGroup).resources("csinodes"),
		newRule(read...).groups(storageGroup).resources("volumeattachments"),
		// the namespaces of pod affinity namespace selectors
		newRule(read...).groups(legacyGroup).resources("namespaces"),
		newRule(read...).groups(storageGroup).resources("csidrivers"),
		newRule(read...).groups(storageGroup).resources("csistoragecapacities"),
		// DynamicResourceAllocation
		newRule(read...).groups(resourceGroup).resources("deviceclasses"),
		newRule(readUpdate...).groups(resourceGroup).resources("resourceclaims"),
		newRule(readUpdate...).groups(resourceGroup).resources("resourceclaims/status"),
		newRule("update").groups(legacyGroup).resources("pods/finalizers"),
		newRule(read...).groups(resourceGroup).resources("resourceslices"),
		// DRAExtendedResource, DRADeviceTaintRules,
		// DRAResourceClaimGranularStatusAuthorization (on in v1.37)
		newRule("create", "delete").groups(resourceGroup).resources("resourceclaims"),
		newRule(read...).groups(resourceGroup).resources("devicetaintrules"),
		newRule("update", "patch").groups(resourceGroup).resources("resourceclaims/binding"),
	}
}
