package realcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/pki"
	"github.com/nodeagent/nodeagent/pkg/netutil"
	"github.com/nodeagent/nodeagent/test/framework"
)

// The cluster's settings, kubeadm's defaults.
const (
	serviceCIDR  = "10.96.0.0/12"
	kubernetesIP = "10.96.0.1"
	clusterDNS   = "10.96.0.10"
	saIssuer     = "https://kubernetes.default.svc.cluster.local"
	// The API server's client certificate towards kubelets: kubeadm's
	// name and group, the group bound to cluster-admin (clusterAdminsBinding).
	kubeletClientUser  = "kube-apiserver-kubelet-client"
	clusterAdminsGroup = "kubeadm:cluster-admins"
	// nodeMonitorGracePeriod is kube-controller-manager's
	// --node-monitor-grace-period.
	nodeMonitorGracePeriod = 20 * time.Second
)

// cluster is the upstream control plane run from the binaries in bin,
// with everything below dir.
type cluster struct {
	bin, dir string
	pkiDir   string
	pki      *pki.PKI
	etcdPKI  *pki.EtcdPKI
	// url is the API server's address; advertise is the address it
	// advertises (the kubernetes Service's endpoint).
	url, advertise string
	admin          kubernetes.Interface
	adminConfig    string // the admin kubeconfig (system:masters)
	procs          []*proc
}

// startCluster generates the PKI and starts etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, waiting until the API
// server is ready and both controllers hold their leader leases. On error
// what was started is stopped.
func startCluster(bin, dir string) (c *cluster, err error) {
	c = &cluster{bin: bin, dir: dir, pkiDir: filepath.Join(dir, "pki")}
	defer func() {
		if err != nil {
			c.stop()
			err = fmt.Errorf("%w\n%s", err, c.logTails())
		}
	}()
	// The API server binds loopback but advertises the host's address: the
	// kubernetes Service's endpoint may not be a loopback address.
	c.advertise = netutil.HostIP()
	if c.advertise == "" {
		return c, errors.New("no host IP to advertise")
	}
	if err := c.writePKI(); err != nil {
		return c, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return c, err
	}
	etcdClient, etcdPeer, apiPort, kcmPort, schedPort := ports[0], ports[1], ports[2], ports[3], ports[4]
	c.url = "https://127.0.0.1:" + strconv.Itoa(apiPort)
	if err := c.writeKubeconfigs(); err != nil {
		return c, err
	}

	etcdURL := "https://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "https://127.0.0.1:" + strconv.Itoa(etcdPeer)
	p := c.pkiPath
	// kubeadm's etcd static pod flags.
	if err := c.start("etcd",
		"--name=realcluster",
		"--data-dir="+filepath.Join(dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=realcluster="+peerURL,
		"--cert-file="+c.etcdPKI.ServerCertFile, "--key-file="+c.etcdPKI.ServerKeyFile,
		"--client-cert-auth=true", "--trusted-ca-file="+c.etcdPKI.CAFile,
		"--peer-cert-file="+c.etcdPKI.PeerCertFile, "--peer-key-file="+c.etcdPKI.PeerKeyFile,
		"--peer-client-cert-auth=true", "--peer-trusted-ca-file="+c.etcdPKI.CAFile,
	); err != nil {
		return c, err
	}
	// kubeadm's kube-apiserver flags.
	if err := c.start("kube-apiserver",
		"--advertise-address="+c.advertise,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(apiPort),
		"--allow-privileged=true",
		"--authorization-mode=Node,RBAC",
		"--client-ca-file="+p(pki.CACertFile),
		"--enable-admission-plugins=NodeRestriction",
		"--enable-bootstrap-token-auth=true",
		"--etcd-servers="+etcdURL,
		"--etcd-cafile="+c.etcdPKI.CAFile,
		"--etcd-certfile="+c.etcdPKI.ClientCertFile,
		"--etcd-keyfile="+c.etcdPKI.ClientKeyFile,
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname",
		"--proxy-client-cert-file="+p("front-proxy-client.crt"),
		"--proxy-client-key-file="+p("front-proxy-client.key"),
		"--requestheader-allowed-names=front-proxy-client",
		"--requestheader-client-ca-file="+p("front-proxy-ca.crt"),
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-username-headers=X-Remote-User",
		"--service-account-issuer="+saIssuer,
		"--service-account-key-file="+p("sa.pub"),
		"--service-account-signing-key-file="+p("sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--tls-cert-file="+p(pki.ServingCertFile),
		"--tls-private-key-file="+p(pki.ServingKeyFile),
		"--cert-dir="+filepath.Join(dir, "apiserver-certs"),
	); err != nil {
		return c, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", c.adminConfig)
	if err != nil {
		return c, err
	}
	if c.admin, err = kubernetes.NewForConfig(rc); err != nil {
		return c, err
	}
	if err := c.waitReady(); err != nil {
		return c, err
	}
	// kubeadm's kube-controller-manager flags.
	kcmConf := filepath.Join(dir, "controller-manager.conf")
	if err := c.start("kube-controller-manager",
		"--authentication-kubeconfig="+kcmConf,
		"--authorization-kubeconfig="+kcmConf,
		"--kubeconfig="+kcmConf,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(kcmPort),
		"--client-ca-file="+p(pki.CACertFile),
		"--cluster-name=kubernetes",
		"--cluster-signing-cert-file="+p(pki.CACertFile),
		"--cluster-signing-key-file="+p(pki.CAKeyFile),
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--leader-elect=true",
		// Shorter than the default 50s (kubeadm passes it through
		// controllerManager.extraArgs), for TestNodeLifecycle; twice the
		// agent's Lease renewal interval (10s, the kubelet's).
		"--node-monitor-grace-period="+nodeMonitorGracePeriod.String(),
		"--requestheader-client-ca-file="+p("front-proxy-ca.crt"),
		"--root-ca-file="+p(pki.CACertFile),
		"--service-account-private-key-file="+p("sa.key"),
		"--service-cluster-ip-range="+serviceCIDR,
		"--use-service-account-credentials=true",
		"--cert-dir="+filepath.Join(dir, "kcm-certs"),
	); err != nil {
		return c, err
	}
	// kubeadm's kube-scheduler flags.
	schedConf := filepath.Join(dir, "scheduler.conf")
	if err := c.start("kube-scheduler",
		"--authentication-kubeconfig="+schedConf,
		"--authorization-kubeconfig="+schedConf,
		"--kubeconfig="+schedConf,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(schedPort),
		"--leader-elect=true",
		"--cert-dir="+filepath.Join(dir, "scheduler-certs"),
	); err != nil {
		return c, err
	}
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		if err := c.waitLease(lease); err != nil {
			return c, err
		}
	}
	// Pods are refused until the serviceaccount controller has created
	// the namespace's default ServiceAccount (the ServiceAccount admission
	// plugin): wait for it, as upstream's e2e framework does.
	if err := c.waitDefaultServiceAccount(); err != nil {
		return c, err
	}
	return c, c.clusterAdminsBinding()
}

// waitDefaultServiceAccount waits for default/default.
func (c *cluster) waitDefaultServiceAccount() error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		if err := c.exited(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = c.admin.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("no ServiceAccount default/default after 2m: %v", last)
}

func (c *cluster) pkiPath(name string) string { return filepath.Join(c.pkiDir, name) }

// writePKI writes kubeadm's PKI: the cluster CA with the API server's
// serving certificate and admin client (pki.Ensure), the etcd CA with
// etcd's certificates and the API server's etcd client (pki.EnsureEtcd),
// the API server's kubelet client in kubeadm:cluster-admins, the front
// proxy CA with its client, and the service account key pair.
func (c *cluster) writePKI() error {
	var err error
	opts := pki.Options{ExtraSANs: []string{kubernetesIP, c.advertise}}
	if c.pki, err = pki.Ensure(c.pkiDir, opts); err != nil {
		return fmt.Errorf("cluster PKI: %w", err)
	}
	if c.etcdPKI, err = pki.EnsureEtcd(c.pkiDir, opts); err != nil {
		return fmt.Errorf("etcd PKI: %w", err)
	}
	cert, key, err := c.pki.IssueClientCert(kubeletClientUser, []string{clusterAdminsGroup}, 0)
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{
		c.pkiPath("apiserver-kubelet-client.crt"): cert,
		c.pkiPath("apiserver-kubelet-client.key"): key,
	}); err != nil {
		return err
	}
	if err := c.writeFrontProxy(); err != nil {
		return err
	}
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(saKey)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&saKey.PublicKey)
	if err != nil {
		return err
	}
	return writeFiles(map[string][]byte{
		c.pkiPath("sa.key"): pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		c.pkiPath("sa.pub"): pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}),
	})
}

// writeFrontProxy writes kubeadm's front-proxy-ca and front-proxy-client
// (the API server's client towards aggregated API servers; its CA is what
// they, kube-controller-manager and kube-scheduler trust for request
// headers).
func (c *cluster) writeFrontProxy() error {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "front-proxy-ca"},
		NotBefore:             now.Add(-5 * time.Minute),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("front-proxy-ca: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "front-proxy-client"},
		NotBefore:    now.Add(-5 * time.Minute),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return fmt.Errorf("front-proxy-client: %w", err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	return writeFiles(map[string][]byte{
		c.pkiPath("front-proxy-ca.crt"):     pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		c.pkiPath("front-proxy-client.crt"): pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		c.pkiPath("front-proxy-client.key"): pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	})
}

// writeKubeconfigs writes admin.conf (system:masters, as kubeadm's
// super-admin.conf), controller-manager.conf and scheduler.conf.
func (c *cluster) writeKubeconfigs() error {
	c.adminConfig = filepath.Join(c.dir, "admin.conf")
	if err := pki.WriteKubeconfig(c.adminConfig, c.url, c.pki.CAPEM, c.pki.AdminCertPEM, c.pki.AdminKeyPEM, pki.AdminUser); err != nil {
		return err
	}
	for file, user := range map[string]string{
		"controller-manager.conf": "system:kube-controller-manager",
		"scheduler.conf":          "system:kube-scheduler",
	} {
		if err := c.writeClientKubeconfig(filepath.Join(c.dir, file), user, nil); err != nil {
			return err
		}
	}
	return nil
}

// writeClientKubeconfig writes a kubeconfig with a client certificate of
// the cluster CA for user in groups.
func (c *cluster) writeClientKubeconfig(path, user string, groups []string) error {
	cert, key, err := c.pki.IssueClientCert(user, groups, 0)
	if err != nil {
		return err
	}
	return pki.WriteKubeconfig(path, c.url, c.pki.CAPEM, cert, key, user)
}

// clusterAdminsBinding creates kubeadm's kubeadm:cluster-admins binding
// (the group to cluster-admin), which the API server's kubelet client
// certificate relies on: the agent authorizes it by SubjectAccessReview.
func (c *cluster) clusterAdminsBinding() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.admin.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding(clusterAdminsGroup, "cluster-admin", clusterAdminsGroup), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create ClusterRoleBinding %s: %w", clusterAdminsGroup, err)
	}
	return nil
}

// waitReady waits for the API server's /readyz.
func (c *cluster) waitReady() error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		if err := c.exited(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, last = c.admin.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("kube-apiserver not ready after 2m: %v", last)
}

// waitLease waits until the leader election lease kube-system/name has a
// holder.
func (c *cluster) waitLease(name string) error {
	deadline := time.Now().Add(2 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		if err := c.exited(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		l, err := c.admin.CoordinationV1().Leases("kube-system").Get(ctx, name, metav1.GetOptions{})
		cancel()
		if err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			return nil
		}
		last = err
		time.Sleep(250 * time.Millisecond)
	}
	return fmt.Errorf("lease kube-system/%s has no holder after 2m: %v", name, last)
}

// exited reports a component that exited.
func (c *cluster) exited() error {
	for _, p := range c.procs {
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s exited: %v", p.name, err)
		default:
		}
	}
	return nil
}

// stop stops the components in reverse order.
func (c *cluster) stop() error {
	var errs []error
	for i := len(c.procs) - 1; i >= 0; i-- {
		if err := c.procs[i].stop(); err != nil {
			errs = append(errs, err)
		}
	}
	c.procs = nil
	return errors.Join(errs...)
}

// logTails is the end of every component's log.
func (c *cluster) logTails() string {
	var b strings.Builder
	for _, p := range c.procs {
		fmt.Fprintf(&b, "--- %s (last lines of %s)\n%s\n", p.name, p.logPath, tail(p.logPath, 30))
	}
	return b.String()
}

// proc is one control plane component.
type proc struct {
	name, logPath string
	cmd           *exec.Cmd
	done          chan error
	once          sync.Once
	stopErr       error
}

// start runs bin/name with args, logging to dir/name.log.
func (c *cluster) start(name string, args ...string) error {
	logPath := filepath.Join(c.dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close() // the child has its own descriptor
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, logPath: logPath, cmd: cmd, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	c.procs = append(c.procs, p)
	return nil
}

// stop sends SIGTERM and waits, then SIGKILL.
func (p *proc) stop() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			_ = p.cmd.Process.Kill()
			<-p.done
			p.stopErr = fmt.Errorf("%s did not stop on SIGTERM", p.name)
		}
	})
	return p.stopErr
}

func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var ports []int
	for len(ports) < n {
		p, err := framework.NewFreePort()
		if err != nil {
			return nil, err
		}
		if !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

func writeFiles(files map[string][]byte) error {
	for path, data := range files {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// tail is the last n lines of the file at path.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
