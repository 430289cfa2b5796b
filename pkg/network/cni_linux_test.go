package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// TestConflistWithPlugins runs the rendered dual-stack conflist through
// the installed plugins, as the runtime would for a pod sandbox: ADD then
// DEL, with a test namespace standing for the host and one for the pod,
// and a host-local store and libcni cache of the test's own.
func TestConflistWithPlugins(t *testing.T) {
	requirePlugins(t, "bridge", "host-local", "portmap")
	hostNS, podNS := newNetns(t), newNetns(t)
	dataDir, cacheDir := t.TempDir(), t.TempDir()
	conf := renderForTest(t, CNIConfig{NetworkName: "pkgnetwork-test", Bridge: "natest0",
		PodCIDRs: []string{"10.244.7.0/24", "fd00:7::/64"}, MTU: 1400, IPMasq: true, HairpinMode: true, DataDir: dataDir})
	ctx := context.Background()
	if err := Validate(ctx, conf, []string{systemPluginDir}); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	list, err := libcni.ConfListFromBytes(conf)
	if err != nil {
		t.Fatal(err)
	}
	cni := libcni.NewCNIConfigWithCacheDir([]string{systemPluginDir}, cacheDir, nil)
	rt := &libcni.RuntimeConf{ContainerID: "pkgnetwork-test-sandbox", IfName: "eth0",
		NetNS: fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), podNS)}

	var res types.Result
	if err := inNetns(hostNS, func() (err error) {
		res, err = cni.AddNetworkList(ctx, list, rt)
		return err
	}); err != nil {
		t.Fatalf("CNI ADD: %v", err)
	}
	deleted := false
	t.Cleanup(func() { // before the namespaces go
		if !deleted {
			_ = inNetns(hostNS, func() error { return cni.DelNetworkList(ctx, list, rt) })
		}
	})

	r, err := types100.NewResultFromResult(res)
	if err != nil {
		t.Fatal(err)
	}
	wantIPs := map[string]string{"10.244.7.0/24": "10.244.7.1", "fd00:7::/64": "fd00:7::1"} // CIDR → gateway
	for _, ipc := range r.IPs {
		for cidr, gw := range wantIPs {
			if _, n, _ := net.ParseCIDR(cidr); n.Contains(ipc.Address.IP) {
				if ipc.Gateway.String() != gw {
					t.Errorf("pod address %s: gateway %s, want %s", ipc.Address.String(), ipc.Gateway, gw)
				}
				delete(wantIPs, cidr)
			}
		}
	}
	if len(wantIPs) != 0 {
		t.Errorf("pod got %v; no address in %v", r.IPs, wantIPs)
	}

	var links []struct {
		MTU int `json:"mtu"`
	}
	if err := json.Unmarshal([]byte(ip(t, podNS, "-j", "link", "show", "eth0")), &links); err != nil || len(links) != 1 || links[0].MTU != 1400 {
		t.Errorf("pod eth0: %+v, %v; want MTU 1400", links, err)
	}
	var addrs []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal([]byte(ip(t, hostNS, "-j", "-4", "addr", "show", "natest0")), &addrs); err != nil ||
		len(addrs) != 1 || len(addrs[0].AddrInfo) != 1 || addrs[0].AddrInfo[0].Local != "10.244.7.1" {
		t.Errorf("bridge natest0 addresses: %+v, %v; want the gateway 10.244.7.1", addrs, err)
	}

	store := filepath.Join(dataDir, "pkgnetwork-test")
	if entries, _ := os.ReadDir(store); len(entries) == 0 {
		t.Errorf("host-local store %s is empty after ADD", store)
	}
	if err := inNetns(hostNS, func() error { return cni.DelNetworkList(ctx, list, rt) }); err != nil {
		t.Fatalf("CNI DEL: %v", err)
	}
	deleted = true
	for _, ipc := range r.IPs {
		if _, err := os.Stat(filepath.Join(store, ipc.Address.IP.String())); !os.IsNotExist(err) {
			t.Errorf("host-local still holds %s after DEL (stat: %v)", ipc.Address.IP, err)
		}
	}
}
