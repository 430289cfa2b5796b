// Package agentconfig holds the agent's settings: Config, a subset of the
// kubelet's KubeletConfiguration (kubelet.config.k8s.io/v1beta1, same field
// names) read strictly from the --config file, and Flags, the settings that
// exist only as command-line flags (--root-dir, --hostname-override,
// --node-ip, --kubeconfig, --config).
//
// Precedence is the kubelet's: explicit flag > config file > default.
// Resolve implements the sequence: parse flags, load --config, re-apply the
// flags the user set. Validate the result with Config.Validate. Defaults
// that depend on whether the agent joined an API server (readOnlyPort)
// are left unset until the agent calls SetModeDefaults.
package agentconfig
