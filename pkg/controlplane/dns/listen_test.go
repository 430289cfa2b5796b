package dns

import (
	"net"
	"strings"
	"testing"
)

// When Address is held by another process, Listen binds Fallback.
func TestListenFallback(t *testing.T) {
	held, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	cfg := Config{Address: held.LocalAddr().String(), Upstreams: []string{"127.0.0.1:1"}, Logger: discard,
		Services: fakeServices{}, Endpoints: fakeEndpoints{}}

	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Listen on a held address without fallback: %v", err)
	}

	cfg.Fallback = "127.0.0.1:0"
	if srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err != nil {
		t.Fatalf("Listen with fallback: %v", err)
	}
	defer srv.udp.Close()
	defer srv.tcp.Close()
	if srv.Addr() == held.LocalAddr().String() {
		t.Fatalf("bound %s, the held address", srv.Addr())
	}
	if tcp := srv.tcp.Addr().(*net.TCPAddr); tcp.Port != srv.udp.LocalAddr().(*net.UDPAddr).Port {
		t.Errorf("TCP port %d differs from UDP's %s", tcp.Port, srv.Addr())
	}
}

func TestConfigValidation(t *testing.T) {
	base := Config{Address: "127.0.0.1:0", Upstreams: []string{"1.1.1.1"}, Services: fakeServices{}, Endpoints: fakeEndpoints{}}
	for name, mutate := range map[string]func(*Config){
		"address":   func(c *Config) { c.Address = "127.0.0.1" },
		"domain":    func(c *Config) { c.ClusterDomain = "bad..domain" },
		"ttl":       func(c *Config) { c.TTL = 7200 },
		"upstream":  func(c *Config) { c.Upstreams = []string{"resolver.example"} },
		"endpoints": func(c *Config) { c.Endpoints = nil },
	} {
		cfg := base
		mutate(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
	if _, err := New(base); err != nil {
		t.Errorf("valid config: %v", err)
	}
}
