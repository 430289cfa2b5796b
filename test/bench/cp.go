package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/nodeagent/nodeagent/pkg/controlplane/server"
)

// controlPlane is pkg/controlplane/server (embedded etcd, API server,
// scheduler, controllers; no agent) run in this process on a temporary
// data dir and free loopback ports, with an admin client whose
// client-side rate limiting is off.
type controlPlane struct {
	dir     string // data dir: PKI, admin kubeconfig, etcd
	url     string // https://127.0.0.1:<port>
	admin   *kubernetes.Clientset
	startup time.Duration // from the call to ready

	stopOnce func() error
}

// startControlPlane runs the server until stop. The server keeps running
// when ctx ends (stop ends it), so that a measurement interrupted by
// Ctrl-C still cleans up through the API.
func startControlPlane(ctx context.Context, prefix string) (*controlPlane, error) {
	begin := time.Now()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	ports, err := apiFreePorts(3)
	if err != nil {
		return nil, errors.Join(err, os.RemoveAll(dir))
	}
	ready := make(chan struct{})
	cfg := server.Config{
		DataDir:        dir,
		SecurePort:     ports[0],
		BindAddress:    "127.0.0.1",
		EtcdClientPort: ports[1],
		EtcdPeerPort:   ports[2],
		DisableAgent:   true,
		// Errors only: under load embedded etcd warns of slow requests.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})),
		Ready:  ready,
	}
	srvCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	var runErr error
	go func() {
		defer close(done)
		runErr = server.Run(srvCtx, cfg)
	}()
	cp := &controlPlane{dir: dir, url: "https://127.0.0.1:" + strconv.Itoa(ports[0])}
	cp.stopOnce = sync.OnceValue(func() error {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			return errors.Join(errors.New("API server did not stop within 1m"), os.RemoveAll(dir))
		}
		var err error
		if runErr != nil {
			err = fmt.Errorf("API server: %w", runErr)
		}
		return errors.Join(err, os.RemoveAll(dir))
	})
	select {
	case <-ready:
	case <-done:
		return nil, fmt.Errorf("API server did not start: %v", errors.Join(runErr, cp.stop()))
	case <-time.After(time.Minute):
		return nil, errors.Join(errors.New("API server not ready after 1m"), cp.stop())
	case <-ctx.Done():
		return nil, errors.Join(ctx.Err(), cp.stop())
	}
	cp.startup = time.Since(begin)

	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, server.KubeconfigFile))
	if err == nil {
		rc.QPS, rc.Burst = 1e6, 1e6 // QPS 0 would mean client-go's default of 5
		cp.admin, err = kubernetes.NewForConfig(rc)
	}
	if err != nil {
		return nil, errors.Join(err, cp.stop())
	}
	return cp, nil
}

// stop ends the server and removes its data dir; later calls return the
// first call's result.
func (cp *controlPlane) stop() error { return cp.stopOnce() }

func apiFreePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n { // all held at once: n distinct ports
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
