package flow

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/volume"
	"github.com/nodeagent/nodeagent/test/framework"
)

const apiVolumesPod = `apiVersion: v1
kind: Pod
metadata: {name: vols}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: ` + framework.BusyboxImage + `
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]
    env:
    - name: MODE
      valueFrom: {configMapKeyRef: {name: app-config, key: mode}}
    envFrom:
    - secretRef: {name: app-secret}
      prefix: S_
    volumeMounts:
    - {name: config, mountPath: /config}
    - {name: secret, mountPath: /secret}
    - {name: both, mountPath: /both}
  volumes:
  - name: config
    configMap:
      name: app-config
      items: [{key: greeting, path: greeting.txt}]
  - name: secret
    secret: {secretName: app-secret, defaultMode: 0400}
  - name: both
    projected:
      sources:
      - configMap: {name: app-config}
      - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}
`

// TestAPIVolumesAndEnv: configMap, secret and projected volumes and env
// from a configMap and a secret, through the API: a missing key holds the
// container in CreateContainerConfigError until the configMap has it, the
// files are read from inside the container, a configMap update reaches the
// running pod, the secret is on tmpfs, and the volumes go with the pod.
func TestAPIVolumesAndEnv(t *testing.T) {
	a := newAgent(t)
	waitSchedulable(t)
	ctx := context.Background()
	cms, secrets := admin.CoreV1().ConfigMaps("default"), admin.CoreV1().Secrets("default")
	t.Cleanup(func() {
		_ = cms.Delete(ctx, "app-config", metav1.DeleteOptions{})
		_ = secrets.Delete(ctx, "app-secret", metav1.DeleteOptions{})
	})
	deleteOnCleanup(t, "pod/vols")
	if _, err := cms.Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"greeting": "hello"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-secret"},
		Data: map[string][]byte{"password": []byte("s3cret")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, "apply", "-f", writeTemp(t, "vols.yaml", apiVolumesPod))

	// The configMap lacks "mode": the container cannot be configured yet.
	waitFor(t, apiTimeout, "CreateContainerConfigError", func() (bool, error) {
		p, err := admin.CoreV1().Pods("default").Get(ctx, "vols", metav1.GetOptions{})
		if err != nil || len(p.Status.ContainerStatuses) == 0 {
			return false, err
		}
		w := p.Status.ContainerStatuses[0].State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && w.Message == "couldn't find key mode in ConfigMap default/app-config",
			fmt.Errorf("state %+v", p.Status.ContainerStatuses[0].State)
	})
	patch := `{"data":{"mode":"fast"}}`
	mustKubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", patch)
	pod := waitPodRunning(t, "vols")

	id := pod.Status.ContainerStatuses[0].ContainerID
	id = id[strings.Index(id, "://")+3:]
	sh := func(cmd string) string {
		res, err := cri.ExecSync(ctx, id, []string{"sh", "-c", cmd}, 10*time.Second)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("exec %q: %v %+v", cmd, err, res)
		}
		return strings.TrimSpace(string(res.Stdout))
	}
	for cmd, want := range map[string]string{
		"echo $MODE $S_password":                        "fast s3cret",
		"cat /config/greeting.txt":                      "hello",
		"cat /secret/password":                          "s3cret",
		"stat -L -c %a /secret/password":                "400",
		"cat /both/greeting; echo; cat /both/ns":        "hello\ndefault",
		"touch /config/x 2>/dev/null || echo read-only": "read-only",
		// The service account token volume admission injected.
		"cat /var/run/secrets/kubernetes.io/serviceaccount/namespace":                  "default",
		"head -c 27 /var/run/secrets/kubernetes.io/serviceaccount/ca.crt":              "-----BEGIN CERTIFICATE-----",
		"tr . '\\n' < /var/run/secrets/kubernetes.io/serviceaccount/token | grep -c .": "3",
	} {
		if got := sh(cmd); got != want {
			t.Errorf("%s: %q, want %q", cmd, got, want)
		}
	}
	// The secret never touches the node's disk: its directory is a tmpfs.
	secretDir := volume.VolumeDir(a.RootDir, pod.UID, "kubernetes.io/secret", "secret")
	if fs := mountType(t, secretDir); fs != "tmpfs" {
		t.Errorf("secret volume %s is on %q, want tmpfs", secretDir, fs)
	}
	// An update reaches the running container (within the sync period).
	mustKubectl(t, "patch", "configmap", "app-config", "--type=merge", "-p", `{"data":{"greeting":"bonjour"}}`)
	waitFor(t, apiTimeout, "the configMap update in the container", func() (bool, error) {
		got := sh("cat /config/greeting.txt")
		return got == "bonjour", fmt.Errorf("greeting.txt = %q", got)
	})

	mustKubectl(t, "delete", "pod", "vols", "--timeout=90s")
	waitPodGone(t, "vols")
	waitFor(t, 30*time.Second, "the pod's volumes to go", func() (bool, error) {
		_, err := os.Stat(volume.PodVolumesDir(a.RootDir, pod.UID))
		return os.IsNotExist(err), err
	})
}

// mountType is the filesystem type mounted exactly at dir ("" if none).
func mountType(t *testing.T, dir string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 9 || f[4] != dir {
			continue
		}
		for i := 6; i < len(f)-1; i++ {
			if f[i] == "-" {
				return f[i+1]
			}
		}
	}
	return ""
}

// TestPersistentVolumeClaim: a pod using a claim bound to a hostPath
// volume reads and writes the host directory; a local volume's node
// affinity puts its pod on that node.
func TestPersistentVolumeClaim(t *testing.T) {
	newAgent(t)
	waitSchedulable(t)
	host := t.TempDir()
	if err := os.WriteFile(host+"/seed", []byte("from the volume\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "pod/pvc-user", "pvc/data", "pv/flow-host-pv")
	manifest := fmt.Sprintf(`apiVersion: v1
kind: PersistentVolume
metadata: {name: flow-host-pv}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  local: {path: %s}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [%s]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {requests: {storage: 100Mi}}
---
apiVersion: v1
kind: Pod
metadata: {name: pvc-user}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "trap 'exit 0' TERM; cat /data/seed > /data/copy; sleep 3600 & wait"]
    volumeMounts: [{name: d, mountPath: /data}]
  volumes:
  - {name: d, persistentVolumeClaim: {claimName: data}}
`, host, nodeName, framework.BusyboxImage)
	mustKubectl(t, "apply", "-f", writeTemp(t, "pvc.yaml", manifest))
	pod := waitPodRunning(t, "pvc-user")
	if pod.Spec.NodeName != nodeName {
		t.Errorf("pod on %q, want %q (the volume's node affinity)", pod.Spec.NodeName, nodeName)
	}
	if out := mustKubectl(t, "get", "pvc", "data", "-o", "jsonpath={.status.phase}/{.spec.volumeName}"); out != "Bound/flow-host-pv" {
		t.Errorf("claim: %q", out)
	}
	waitFor(t, apiTimeout, "the container's write on the host", func() (bool, error) {
		b, err := os.ReadFile(host + "/copy")
		return err == nil && string(b) == "from the volume\n", err
	})
	mustKubectl(t, "delete", "pod", "pvc-user", "--timeout=90s")
	waitPodGone(t, "pvc-user")
	if b, err := os.ReadFile(host + "/seed"); err != nil || len(b) == 0 {
		t.Errorf("the volume's data after the pod: %q %v", b, err)
	}
}
