package registry

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Namespaces.

func (b *builder) namespaces(serviceAccounts *Resource) *Resource {
	return &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("Namespace"),
		Plural:       "namespaces",
		Singular:     "namespace",
		ShortNames:   []string{"ns"},
		Verbs:        noCollDelete,
		Subresources: []string{"finalize", "status"},
		New:          func() runtime.Object { return &v1.Namespace{} },
		NewList:      func() runtime.Object { return &v1.NamespaceList{} },

		Default:                hook(defaultNamespace),
		PrepareForCreate:       hook(prepareNamespaceForCreate),
		PrepareForUpdate:       hook2(prepareNamespaceForUpdate),
		PrepareForStatusUpdate: hook2(func(ns, old *v1.Namespace) { ns.Spec = old.Spec }),
		PrepareForFinalize:     hook2(func(ns, old *v1.Namespace) { ns.Status = old.Status }),
		Validate:               check(validateNamespace),
		ValidateUpdate:         check2(validateNamespaceUpdate),
		ValidateStatusUpdate:   check2(validateNamespaceStatusUpdate),
		ValidateFinalize:       check2(validateNamespaceUpdate),
		FieldSet: fieldSet(false, func(ns *v1.Namespace) fields.Set {
			return fields.Set{"status.phase": string(ns.Status.Phase)}
		}),
		Table: table(namespaceColumns, func(ns *v1.Namespace) []interface{} {
			return []interface{}{ns.Name, string(ns.Status.Phase), b.age(ns.ObjectMeta)}
		}),

		AfterCreate:      namespaceCreated(serviceAccounts),
		PrepareForDelete: hook(prepareNamespaceForDelete),
		FinalizeDelete:   finalizeNamespaceDelete,
	}
}

func defaultNamespace(ns *v1.Namespace) {
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[v1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = v1.NamespaceActive
	}
}

func prepareNamespaceForCreate(ns *v1.Namespace) {
	ns.Status = v1.NamespaceStatus{Phase: v1.NamespaceActive}
	if !slices.Contains(ns.Spec.Finalizers, v1.FinalizerKubernetes) {
		ns.Spec.Finalizers = append(ns.Spec.Finalizers, v1.FinalizerKubernetes)
	}
}

// prepareNamespaceForUpdate: spec.finalizers only change through finalize.
func prepareNamespaceForUpdate(ns, old *v1.Namespace) {
	ns.Spec.Finalizers = old.Spec.Finalizers
	ns.Status = old.Status
}

func validateNamespace(ns *v1.Namespace) field.ErrorList {
	errs := validateMeta(&ns.ObjectMeta, false, apimachineryvalidation.NameIsDNSLabel)
	for i, f := range ns.Spec.Finalizers {
		errs = append(errs, apimachineryvalidation.ValidateFinalizerName(string(f), field.NewPath("spec", "finalizers").Index(i))...)
	}
	return errs
}

func validateNamespaceUpdate(ns, old *v1.Namespace) field.ErrorList {
	return append(validateMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta), validateNamespace(ns)...)
}

func validateNamespaceStatusUpdate(ns, old *v1.Namespace) field.ErrorList {
	errs := validateMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta)
	p := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != v1.NamespaceActive {
			errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != v1.NamespaceTerminating {
		errs = append(errs, field.Invalid(p, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// Nodes.

func (b *builder) nodes() *Resource {
	return &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("Node"),
		Plural:       "nodes",
		Singular:     "node",
		ShortNames:   []string{"no"},
		Verbs:        allVerbs,
		Subresources: []string{"proxy", "status"},
		New:          func() runtime.Object { return &v1.Node{} },
		NewList:      func() runtime.Object { return &v1.NodeList{} },

		// Nodes register themselves with their status: create keeps it.
		Default:                hook(defaultNode),
		PrepareForUpdate:       hook2(func(n, old *v1.Node) { n.Status = old.Status }),
		PrepareForStatusUpdate: hook2(func(n, old *v1.Node) { n.Spec = old.Spec }),
		Validate:               check(validateNode),
		ValidateUpdate:         check2(validateNodeUpdate),
		ValidateStatusUpdate:   check2(validateNodeUpdate),
		FieldSet: fieldSet(false, func(n *v1.Node) fields.Set {
			return fields.Set{"spec.unschedulable": fmt.Sprint(n.Spec.Unschedulable)}
		}),
		Table: table(nodeColumns, b.nodeRow),
	}
}

func defaultNode(n *v1.Node) {
	if n.Status.Allocatable == nil && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

var taintEffects = []v1.TaintEffect{v1.TaintEffectNoSchedule, v1.TaintEffectPreferNoSchedule, v1.TaintEffectNoExecute}

func validateNode(n *v1.Node) field.ErrorList {
	errs := validateMeta(&n.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	seen := map[string]bool{}
	for i, t := range n.Spec.Taints {
		p := spec.Child("taints").Index(i)
		errs = append(errs, qualifiedName(t.Key, p.Child("key"))...)
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
		}
		if !slices.Contains(taintEffects, t.Effect) {
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		if k := t.Key + "/" + string(t.Effect); seen[k] {
			errs = append(errs, field.Duplicate(p, t.Key+":"+string(t.Effect)))
		} else {
			seen[k] = true
		}
	}
	if len(n.Spec.PodCIDRs) > 2 {
		errs = append(errs, field.TooMany(spec.Child("podCIDRs"), len(n.Spec.PodCIDRs), 2))
	}
	for i, c := range n.Spec.PodCIDRs {
		errs = append(errs, validation.IsValidCIDRForLegacyField(spec.Child("podCIDRs").Index(i), c, false, nil)...)
	}
	status := field.NewPath("status")
	for name, q := range n.Status.Capacity {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(status.Child("capacity").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	for name, q := range n.Status.Allocatable {
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(status.Child("allocatable").Key(string(name)), q.String(), "must be greater than or equal to 0"))
		}
	}
	return errs
}

func validateNodeUpdate(n, old *v1.Node) field.ErrorList {
	errs := append(validateMetaUpdate(&n.ObjectMeta, &old.ObjectMeta), validateNode(n)...)
	spec := field.NewPath("spec")
	if len(old.Spec.PodCIDRs) > 0 && !slices.Equal(n.Spec.PodCIDRs, old.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(spec.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && n.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(spec.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

// ConfigMaps, secrets, service accounts: no spec/status split.

func (b *builder) configMaps() *Resource {
	return &Resource{
		GVK:        v1.SchemeGroupVersion.WithKind("ConfigMap"),
		Plural:     "configmaps",
		Singular:   "configmap",
		ShortNames: []string{"cm"},
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &v1.ConfigMap{} },
		NewList:    func() runtime.Object { return &v1.ConfigMapList{} },

		Validate:       check(validateConfigMap),
		ValidateUpdate: check2(validateConfigMapUpdate),
		FieldSet:       fieldSet[*v1.ConfigMap](true, nil),
		Table: table(configMapColumns, func(cm *v1.ConfigMap) []interface{} {
			return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), b.age(cm.ObjectMeta)}
		}),
	}
}

func validateConfigMap(cm *v1.ConfigMap) field.ErrorList {
	errs := validateMeta(&cm.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	size := 0
	for _, k := range sortedKeys(cm.Data) {
		size += len(cm.Data[k])
		errs = append(errs, configKey(k, field.NewPath("data").Key(k))...)
	}
	for _, k := range sortedKeys(cm.BinaryData) {
		size += len(cm.BinaryData[k])
		errs = append(errs, configKey(k, field.NewPath("binaryData").Key(k))...)
		if _, ok := cm.Data[k]; ok {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(k), k, "duplicate of key present in data"))
		}
	}
	if size > v1.MaxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", v1.MaxSecretSize))
	}
	return errs
}

func validateConfigMapUpdate(cm, old *v1.ConfigMap) field.ErrorList {
	errs := validateMetaUpdate(&cm.ObjectMeta, &old.ObjectMeta)
	if old.Immutable != nil && *old.Immutable {
		errs = append(errs, immutableWhenSet(cm.Immutable,
			"data", !equality.Semantic.DeepEqual(cm.Data, old.Data),
			"binaryData", !equality.Semantic.DeepEqual(cm.BinaryData, old.BinaryData))...)
	}
	return append(errs, validateConfigMap(cm)...)
}

func (b *builder) secrets() *Resource {
	return &Resource{
		GVK:        v1.SchemeGroupVersion.WithKind("Secret"),
		Plural:     "secrets",
		Singular:   "secret",
		Namespaced: true,
		Verbs:      allVerbs,
		New:        func() runtime.Object { return &v1.Secret{} },
		NewList:    func() runtime.Object { return &v1.SecretList{} },

		Default:        hook(defaultSecret),
		Validate:       check(validateSecret),
		ValidateUpdate: check2(validateSecretUpdate),
		FieldSet: fieldSet(true, func(s *v1.Secret) fields.Set {
			return fields.Set{"type": string(s.Type)}
		}),
		Table: table(secretColumns, func(s *v1.Secret) []interface{} {
			return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), b.age(s.ObjectMeta)}
		}),
	}
}

// defaultSecret sets type Opaque and folds the write-only stringData into
// data, as conversion does upstream.
func defaultSecret(s *v1.Secret) {
	if s.Type == "" {
		s.Type = v1.SecretTypeOpaque
	}
	if len(s.StringData) > 0 && s.Data == nil {
		s.Data = map[string][]byte{}
	}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	s.StringData = nil
}

func validateSecret(s *v1.Secret) field.ErrorList {
	errs := validateMeta(&s.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	data := field.NewPath("data")
	size := 0
	for _, k := range sortedKeys(s.Data) {
		size += len(s.Data[k])
		errs = append(errs, configKey(k, data.Key(k))...)
	}
	if size > v1.MaxSecretSize {
		errs = append(errs, field.TooLong(data, "", v1.MaxSecretSize))
	}
	require := func(keys ...string) {
		for _, k := range keys {
			if _, ok := s.Data[k]; !ok {
				errs = append(errs, field.Required(data.Key(k), ""))
			}
		}
	}
	switch s.Type {
	case v1.SecretTypeServiceAccountToken:
		if s.Annotations[v1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(v1.ServiceAccountNameKey), ""))
		}
	case v1.SecretTypeDockercfg:
		require(v1.DockerConfigKey)
	case v1.SecretTypeDockerConfigJson:
		require(v1.DockerConfigJsonKey)
	case v1.SecretTypeBasicAuth:
		_, u := s.Data[v1.BasicAuthUsernameKey]
		_, p := s.Data[v1.BasicAuthPasswordKey]
		if !u && !p {
			require(v1.BasicAuthUsernameKey, v1.BasicAuthPasswordKey)
		}
	case v1.SecretTypeSSHAuth:
		require(v1.SSHAuthPrivateKey)
	case v1.SecretTypeTLS:
		require(v1.TLSCertKey, v1.TLSPrivateKeyKey)
	}
	return errs
}

func validateSecretUpdate(s, old *v1.Secret) field.ErrorList {
	errs := validateMetaUpdate(&s.ObjectMeta, &old.ObjectMeta)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
	if old.Immutable != nil && *old.Immutable {
		errs = append(errs, immutableWhenSet(s.Immutable, "data", !equality.Semantic.DeepEqual(s.Data, old.Data))...)
	}
	return append(errs, validateSecret(s)...)
}

// immutableWhenSet reports changes to an object whose old version had
// immutable: true; changed lists pairs of field name and whether it changed.
func immutableWhenSet(immutable *bool, changed ...any) field.ErrorList {
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if immutable == nil || !*immutable {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	for i := 0; i+1 < len(changed); i += 2 {
		if changed[i+1].(bool) {
			errs = append(errs, field.Forbidden(field.NewPath(changed[i].(string)), msg))
		}
	}
	return errs
}

func (b *builder) serviceAccounts() *Resource {
	r := &Resource{
		GVK:          v1.SchemeGroupVersion.WithKind("ServiceAccount"),
		Plural:       "serviceaccounts",
		Singular:     "serviceaccount",
		ShortNames:   []string{"sa"},
		Namespaced:   true,
		Verbs:        allVerbs,
		Subresources: []string{"token"},
		New:          func() runtime.Object { return &v1.ServiceAccount{} },
		NewList:      func() runtime.Object { return &v1.ServiceAccountList{} },
		FieldSet:     fieldSet[*v1.ServiceAccount](true, nil),
		Table: table(serviceAccountColumns, func(sa *v1.ServiceAccount) []interface{} {
			return []interface{}{sa.Name, int64(len(sa.Secrets)), b.age(sa.ObjectMeta)}
		}),
	}
	r.Validate, r.ValidateUpdate = simpleValidation(func(sa *v1.ServiceAccount) field.ErrorList {
		return validateMeta(&sa.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain)
	})
	return r
}
