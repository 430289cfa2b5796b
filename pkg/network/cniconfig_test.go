package network

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
)

// renderedBridge is the part of the bridge plugin's config the tests check.
type renderedBridge struct {
	Bridge      string `json:"bridge"`
	IsGateway   bool   `json:"isGateway"`
	IPMasq      bool   `json:"ipMasq"`
	HairpinMode bool   `json:"hairpinMode"`
	MTU         int    `json:"mtu"`
	IPAM        struct {
		Type    string                `json:"type"`
		Ranges  [][]map[string]string `json:"ranges"`
		Routes  []map[string]string   `json:"routes"`
		DataDir string                `json:"dataDir"`
	} `json:"ipam"`
}

func TestRenderConflist(t *testing.T) {
	tests := []struct {
		name       string
		in         CNIConfig
		wantBridge string
		wantRanges [][]map[string]string
		wantRoutes []map[string]string
		wantTypes  []string
	}{{
		name:       "IPv4 with defaults",
		in:         CNIConfig{NetworkName: "nodeagent", PodCIDRs: []string{"10.244.1.0/24"}},
		wantBridge: DefaultBridge,
		wantRanges: [][]map[string]string{{{"subnet": "10.244.1.0/24"}}},
		wantRoutes: []map[string]string{{"dst": "0.0.0.0/0"}},
		wantTypes:  []string{"bridge", "portmap"},
	}, {
		name: "dual stack, IPv6 first, everything set",
		in: CNIConfig{NetworkName: "pods", Bridge: "br-pods", PodCIDRs: []string{"fd00:10:244:1::/64", "10.244.1.0/24"},
			MTU: 1450, HairpinMode: true, IPMasq: true, DataDir: "/var/lib/nodeagent/ipam", Loopback: true},
		wantBridge: "br-pods",
		wantRanges: [][]map[string]string{{{"subnet": "fd00:10:244:1::/64"}}, {{"subnet": "10.244.1.0/24"}}},
		wantRoutes: []map[string]string{{"dst": "::/0"}, {"dst": "0.0.0.0/0"}},
		wantTypes:  []string{"bridge", "portmap", "loopback"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RenderConflist(tt.in)
			if err != nil {
				t.Fatalf("RenderConflist: %v", err)
			}
			list, err := libcni.ConfListFromBytes(out)
			if err != nil {
				t.Fatalf("libcni cannot parse the conflist: %v\n%s", err, out)
			}
			if list.Name != tt.in.NetworkName || list.CNIVersion != CNISpecVersion {
				t.Errorf("name, version = %q, %q; want %q, %q", list.Name, list.CNIVersion, tt.in.NetworkName, CNISpecVersion)
			}
			var types []string
			for _, p := range list.Plugins {
				types = append(types, p.Network.Type)
			}
			if !reflect.DeepEqual(types, tt.wantTypes) {
				t.Fatalf("plugins = %v, want %v", types, tt.wantTypes)
			}
			var br renderedBridge
			if err := json.Unmarshal(list.Plugins[0].Bytes, &br); err != nil {
				t.Fatal(err)
			}
			if br.Bridge != tt.wantBridge || !br.IsGateway || br.IPMasq != tt.in.IPMasq ||
				br.HairpinMode != tt.in.HairpinMode || br.MTU != tt.in.MTU {
				t.Errorf("bridge plugin = %+v, want bridge %q, gateway, ipMasq %v, hairpin %v, mtu %d",
					br, tt.wantBridge, tt.in.IPMasq, tt.in.HairpinMode, tt.in.MTU)
			}
			if br.IPAM.Type != "host-local" || br.IPAM.DataDir != tt.in.DataDir {
				t.Errorf("ipam type, dataDir = %q, %q; want host-local, %q", br.IPAM.Type, br.IPAM.DataDir, tt.in.DataDir)
			}
			if !reflect.DeepEqual(br.IPAM.Ranges, tt.wantRanges) || !reflect.DeepEqual(br.IPAM.Routes, tt.wantRoutes) {
				t.Errorf("ipam ranges, routes = %v, %v; want %v, %v", br.IPAM.Ranges, br.IPAM.Routes, tt.wantRanges, tt.wantRoutes)
			}
			pm := list.Plugins[1].Network
			if !pm.Capabilities["portMappings"] {
				t.Errorf("portmap capabilities = %v, want portMappings", pm.Capabilities)
			}
			if !strings.Contains(string(list.Plugins[1].Bytes), `"snat":true`) {
				t.Errorf("portmap config %s: want snat true", list.Plugins[1].Bytes)
			}
		})
	}
}

func TestRenderConflistOmitsUnsetOptionals(t *testing.T) {
	out, err := RenderConflist(CNIConfig{NetworkName: "n", PodCIDRs: []string{"10.0.0.0/16"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"mtu", "dataDir", "loopback"} {
		if strings.Contains(string(out), field) {
			t.Errorf("conflist has %q though it is unset:\n%s", field, out)
		}
	}
}

func TestRenderConflistIsStable(t *testing.T) {
	c := CNIConfig{NetworkName: "n", PodCIDRs: []string{"10.0.0.0/16", "fd00::/64"}, IPMasq: true}
	a, err := RenderConflist(c)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := RenderConflist(c)
	if string(a) != string(b) {
		t.Errorf("two renderings differ:\n%s\n%s", a, b)
	}
}

func TestRenderConflistRejects(t *testing.T) {
	ok := CNIConfig{NetworkName: "n", PodCIDRs: []string{"10.244.0.0/24"}}
	tests := []struct {
		name    string
		mutate  func(*CNIConfig)
		wantErr string
	}{
		{"empty name", func(c *CNIConfig) { c.NetworkName = "" }, "name is empty"},
		{"bad name", func(c *CNIConfig) { c.NetworkName = "-x y" }, `name "-x y"`},
		{"no CIDRs", func(c *CNIConfig) { c.PodCIDRs = nil }, "no pod CIDRs"},
		{"unparsable CIDR", func(c *CNIConfig) { c.PodCIDRs = []string{"10.244.0.0"} }, `pod CIDR "10.244.0.0"`},
		{"host bits set", func(c *CNIConfig) { c.PodCIDRs = []string{"10.244.0.5/24"} }, "did you mean 10.244.0.0/24"},
		{"two IPv4", func(c *CNIConfig) { c.PodCIDRs = []string{"10.244.0.0/24", "10.245.0.0/24"} }, "at most one CIDR per IP family"},
		{"two IPv6", func(c *CNIConfig) { c.PodCIDRs = []string{"fd00::/64", "10.1.0.0/24", "fd01::/64"} }, "at most one CIDR per IP family"},
		{"too small", func(c *CNIConfig) { c.PodCIDRs = []string{"10.244.0.0/31"} }, "too small"},
		{"bad bridge", func(c *CNIConfig) { c.Bridge = "a-very-long-bridge-name" }, "not a valid device name"},
		{"negative MTU", func(c *CNIConfig) { c.MTU = -1 }, "MTU -1"},
		{"IPv6 MTU", func(c *CNIConfig) { c.MTU = 1000; c.PodCIDRs = []string{"fd00::/64"} }, "out of range 1280-65535"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mutate(&c)
			out, err := RenderConflist(c)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("RenderConflist(%+v) = %s, %v; want an error with %q", c, out, err, tt.wantErr)
			}
		})
	}
}
