package agentconfig

import (
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Files written for a kubelet by the tools users run, kept under
// testdata/compat: kubeadm v1.37's /var/lib/kubelet/config.yaml
// (componentconfigs/kubelet.go's defaults, marshalled with every zero
// value as kubeadm writes them), k3s' kubelet.conf.d/00-k3s-defaults.conf
// with a user's drop-in, and an EKS AL2023 (nodeadm) config.json with its
// config.json.d drop-in. They load; each unimplemented field they set is
// one warning.

// validExceptCgroupDriver checks that c validates once its cgroupDriver is
// cgroupfs: systemd is refused where the agent runs (validation), which
// is the agent's start, not the file's load.
func validExceptCgroupDriver(t *testing.T, c *Config) {
	t.Helper()
	c.CgroupDriver = "cgroupfs"
	if _, err := c.Validate(); err != nil {
		t.Errorf("invalid with cgroupDriver cgroupfs: %v", err)
	}
}

func notImplementedWarnings(prefix string, fields ...string) []string {
	var w []string
	for _, f := range fields {
		w = append(w, prefix+NotImplementedWarning(f))
	}
	return w
}

func checkWarnings(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestKubeadmConfig(t *testing.T) {
	path := "testdata/compat/kubeadm-config.yaml"
	c, warnings, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	checkWarnings(t, warnings, notImplementedWarnings("config file "+path+": ",
		"httpCheckFrequency", "streamingConnectionIdleTimeout", "nodeStatusReportFrequency",
		"cpuManagerReconcilePeriod",
		"memorySwap", "logging", "shutdownGracePeriod",
		"shutdownGracePeriodCriticalPods", "crashLoopBackOff"))
	if !c.RotateCertificates {
		t.Error("rotateCertificates: true not loaded")
	}
	if c.StaticPodPath != "/etc/kubernetes/manifests" || c.CgroupDriver != "systemd" ||
		!slices.Equal(c.ClusterDNS, []string{"10.96.0.10"}) || c.ClusterDomain != "cluster.local" ||
		c.Authentication.X509.ClientCAFile != "/etc/kubernetes/pki/ca.crt" {
		t.Errorf("file values not loaded: %+v", c)
	}
	if *c.Authentication.Anonymous.Enabled || !*c.Authentication.Webhook.Enabled || c.Authorization.Mode != AuthorizationModeWebhook {
		t.Errorf("auth = %+v %+v", c.Authentication, c.Authorization)
	}
	if *c.HealthzPort != 10248 || c.HealthzBindAddress != "127.0.0.1" || *c.ResolverConfig != "/run/systemd/resolve/resolv.conf" {
		t.Errorf("healthz %d %s resolvConf %s", *c.HealthzPort, c.HealthzBindAddress, *c.ResolverConfig)
	}
	// kubeadm's zero values mean upstream's defaults, as for the kubelet.
	if c.ContainerRuntimeEndpoint != DefaultContainerRuntimeEndpoint || c.SyncFrequency.Duration != time.Minute ||
		c.Authentication.Webhook.CacheTTL.Duration != DefaultAuthenticationCacheTTL ||
		c.Authorization.Webhook.CacheAuthorizedTTL.Duration != DefaultAuthorizedCacheTTL {
		t.Errorf("zero values not defaulted: endpoint %q syncFrequency %v cacheTTL %v", c.ContainerRuntimeEndpoint,
			c.SyncFrequency.Duration, c.Authentication.Webhook.CacheTTL.Duration)
	}
	validExceptCgroupDriver(t, c)
}

func TestK3sDropins(t *testing.T) {
	dir := "testdata/compat/k3s/kubelet.conf.d"
	c, warnings, err := LoadFiles("", dir)
	if err != nil {
		t.Fatal(err)
	}
	k3s := "drop-in config file " + filepath.Join(dir, "00-k3s-defaults.conf") + ": "
	user := "drop-in config file " + filepath.Join(dir, "50-user.conf") + ": "
	want := notImplementedWarnings(k3s,
		"httpCheckFrequency", "streamingConnectionIdleTimeout", "nodeStatusReportFrequency", "cpuManagerReconcilePeriod", "failSwapOn", "memorySwap", "logging",
		"shutdownGracePeriod", "shutdownGracePeriodCriticalPods", "crashLoopBackOff")
	checkWarnings(t, warnings, append(want, notImplementedWarnings(user)...))
	if c.ContainerRuntimeEndpoint != "unix:///run/k3s/containerd/containerd.sock" || c.CgroupDriver != "cgroupfs" ||
		c.StaticPodPath != "/var/lib/rancher/k3s/agent/pod-manifests" ||
		c.TLSCertFile != "/var/lib/rancher/k3s/agent/serving-kubelet.crt" || *c.SerializeImagePulls {
		t.Errorf("k3s values not loaded: %+v", c)
	}
	if c.MaxPods != 250 || !slices.Equal(c.ClusterDNS, []string{"10.43.0.53"}) || !maps.Equal(c.KubeReserved, map[string]string{"cpu": "200m"}) {
		t.Errorf("user drop-in: maxPods %d clusterDNS %v kubeReserved %v", c.MaxPods, c.ClusterDNS, c.KubeReserved)
	}
	if _, err := c.Validate(); err != nil {
		t.Errorf("k3s config invalid: %v", err)
	}
}

func TestEKSConfig(t *testing.T) {
	file, dir := "testdata/compat/eks/config.json", "testdata/compat/eks/config.json.d"
	c, warnings, err := LoadFiles(file, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := notImplementedWarnings("config file "+file+": ",
		"tlsCipherSuites", "hairpinMode", "protectKernelDefaults", "featureGates",
		"providerID", "logging", "shutdownGracePeriod",
		"shutdownGracePeriodCriticalPods")
	want = append(want, notImplementedWarnings("drop-in config file "+filepath.Join(dir, "40-nodeadm.conf")+": ", "featureGates")...)
	checkWarnings(t, warnings, want)
	if c.MaxPods != 58 || *c.ReadOnlyPort != 0 || !*c.ServerTLSBootstrap || c.CgroupRoot != "/" || c.CgroupDriver != "systemd" {
		t.Errorf("EKS values not loaded: %+v", c)
	}
	if !maps.Equal(c.KubeReserved, map[string]string{"cpu": "70m", "ephemeral-storage": "1Gi", "memory": "893Mi"}) {
		t.Errorf("kubeReserved %v: the drop-in's memory merged over the file's", c.KubeReserved)
	}
	taint := v1.Taint{Key: "node.example.com/initializing", Value: "true", Effect: v1.TaintEffectNoSchedule}
	if len(c.RegisterWithTaints) != 1 || c.RegisterWithTaints[0] != taint {
		t.Errorf("registerWithTaints %v", c.RegisterWithTaints)
	}
	validExceptCgroupDriver(t, c)
}
