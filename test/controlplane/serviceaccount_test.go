package controlplane_test

import (
	"regexp"
	"strings"
	"testing"
)

// TestServiceAccountTokenVolume: `kubectl run` a pod (nothing runs it) and
// find the API access volume upstream's ServiceAccount admission adds,
// mounted read-only in the container.
func TestServiceAccountTokenVolume(t *testing.T) {
	ns := namespace(t)
	runPod(t, ns, "p", "")
	get := func(path string) string {
		return mustKubectl(t, "-n", ns, "get", "pod", "p", "-o", "jsonpath={"+path+"}")
	}
	name := get(".spec.volumes[0].name")
	if !regexp.MustCompile(`^kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}$`).MatchString(name) {
		t.Errorf("volume name %q", name)
	}
	for path, want := range map[string]string{
		".spec.serviceAccountName":                                   "default",
		".spec.volumes[0].projected.defaultMode":                     "420",
		".spec.volumes[0].projected.sources[0].serviceAccountToken":  `{"expirationSeconds":3607,"path":"token"}`,
		".spec.volumes[0].projected.sources[1].configMap":            `{"items":[{"key":"ca.crt","path":"ca.crt"}],"name":"kube-root-ca.crt"}`,
		".spec.volumes[0].projected.sources[2].downwardAPI.items[0]": `{"fieldRef":{"apiVersion":"v1","fieldPath":"metadata.namespace"},"path":"namespace"}`,
		".spec.containers[0].volumeMounts[0]":                        `{"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount","name":"` + name + `","readOnly":true}`,
		".spec.containers[0].volumeMounts[*].name":                   name,
	} {
		if got := get(path); got != want {
			t.Errorf("%s: got %s, want %s", path, got, want)
		}
	}
}

// TestServiceAccountMissing: a pod naming a service account that does not
// exist is refused with upstream's message.
func TestServiceAccountMissing(t *testing.T) {
	ns := namespace(t)
	_, stderr, err := kubectl(t, "-n", ns, "run", "x", "--image=busybox:1", `--overrides={"spec":{"serviceAccountName":"nope"}}`)
	want := `Error from server (Forbidden): pods "x" is forbidden: error looking up service account ` + ns + `/nope: serviceaccount "nope" not found` + "\n"
	if err == nil || stderr != want {
		t.Errorf("kubectl run with a missing service account: err=%v\nstderr: %q\nwant:   %q", err, stderr, want)
	}
}

// TestRootCAConfigMap: a new namespace gets kube-root-ca.crt holding the
// cluster CA (the admin kubeconfig's), as upstream's publisher makes it.
func TestRootCAConfigMap(t *testing.T) {
	ns := namespace(t)
	_, ca := serverAndCA(t)
	waitKubectl(t, "kube-root-ca.crt in "+ns, func(out string) bool { return out != "" },
		"-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", "name")
	got := mustKubectl(t, "-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", `jsonpath={.data.ca\.crt}`)
	if got != string(ca) {
		t.Errorf("ca.crt:\n%s\nwant the cluster CA:\n%s", got, ca)
	}
	desc := mustKubectl(t, "-n", ns, "get", "configmap", "kube-root-ca.crt", "-o", `jsonpath={.metadata.annotations.kubernetes\.io/description}`)
	if !strings.HasPrefix(desc, "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints") {
		t.Errorf("description %q", desc)
	}
}
