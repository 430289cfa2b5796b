// Package sysctl is the kubelet's sysctl policy (pkg/kubelet/sysctl): the
// safe sysctls a pod may always set (some only from the kernel version
// that namespaced them), the KubeletConfiguration allowedUnsafeSysctls
// patterns and their validation, and the allowlist node admission checks
// a pod's spec.securityContext.sysctls against (reason SysctlForbidden).
// Names are compared in dotted form: '/' separators are turned into '.'
// as the kubelet does (component-helpers' NormalizeName).
package sysctl
