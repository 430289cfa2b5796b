// Package agentconfig holds the agent's settings: Config, a subset of the
// kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1, same field
// names) read from the --config file and the --config-dir drop-ins, and
// Flags, the settings that exist only as command-line flags (--root-dir,
// --hostname-override, --node-ip, --kubeconfig, --config, --config-dir).
//
// Files are decoded as the kubelet decodes them, so that one written by
// kubeadm, k3s or a cloud's node image loads: a wrong apiVersion or kind,
// malformed YAML or a value of the wrong type is an error; each upstream
// field the agent does not implement (compat.go) is ignored with a
// warning naming it; anything else strict decoding refuses falls back to
// lenient decoding with upstream's warning. Callers log the warnings.
//
// Precedence is the kubelet's: explicit flag > drop-ins > config file >
// default. Resolve implements the sequence: parse flags, load --config,
// merge the drop-ins (LoadFiles), re-apply the flags the user set.
// Validate the result with Config.Validate. Defaults that depend on
// whether the agent joined an API server (readOnlyPort), and
// serverTLSBootstrap (false either way, as upstream's, but told apart
// from an explicit value), are left unset
// until the agent calls SetModeDefaults.
package agentconfig
