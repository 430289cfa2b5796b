package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent/nodeagent/pkg/crash"
)

// PodLister returns the pods the agent runs, with their status.
type PodLister interface {
	Pods() []*v1.Pod
}

// HealthChecker returns nil when the agent is healthy.
type HealthChecker func() error

// Handler builds the read-only API: GET /pods and /healthz.
func Handler(pods PodLister, health HealthChecker) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /pods", func(w http.ResponseWriter, r *http.Request) {
		list := v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for _, p := range pods.Pods() {
			list.Items = append(list.Items, *p)
		}
		if list.Items == nil {
			list.Items = []v1.Pod{}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&list)
	})
	mux.HandleFunc("GET /pods/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/pods", http.StatusMovedPermanently)
	})
	mux.Handle("GET /healthz", HealthzHandler(health))
	return mux
}

// HealthzHandler answers "ok", or 500 with the reason.
func HealthzHandler(health HealthChecker) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if health != nil {
			if err := health(); err != nil {
				http.Error(w, fmt.Sprintf("[-]%v", err), http.StatusInternalServerError)
				return
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
}

// Serve listens on addr and serves h until ctx ends. The listener is open
// when Serve returns; the channel reports how serving ended.
func Serve(ctx context.Context, addr string, h http.Handler, log *slog.Logger) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	// A panic is answered with a 500 and logged at error, not left to
	// net/http, which drops the connection and logs to its error log.
	h = crash.HTTP(crash.HTTPConfig{Component: "readonly", Logger: log, Body: http.StatusText(http.StatusInternalServerError)}, h)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving", "addr", ln.Addr().String())
	return ln.Addr(), done, nil
}
