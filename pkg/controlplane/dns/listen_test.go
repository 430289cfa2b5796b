package dns

import (
	"net"
	"strings"
	"testing"
)

// Listen on an address another process holds fails (the server logs it
// and runs without DNS when that is the default address).
func TestListenInUse(t *testing.T) {
	held, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	srv, err := New(Config{Address: held.LocalAddr().String(), Upstreams: []string{"127.0.0.1:1"}, Logger: discard,
		Services: fakeServices{}, Endpoints: fakeEndpoints{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Listen(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("Listen on a held address: %v", err)
	}
}

// Port 0 takes one free port for both UDP and TCP.
func TestListenSamePort(t *testing.T) {
	pc, l, err := listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	defer l.Close()
	if tcp := l.Addr().(*net.TCPAddr); tcp.Port != pc.LocalAddr().(*net.UDPAddr).Port {
		t.Errorf("TCP port %d differs from UDP's %s", tcp.Port, pc.LocalAddr())
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
