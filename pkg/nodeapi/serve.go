package nodeapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// The kubelet's server timeouts: long enough for a 4-hour exec or follow.
const (
	idleTimeout    = 90 * time.Second
	streamTimeout  = 4 * time.Hour
	maxHeaderBytes = 1 << 20
	headerTimeout  = 10 * time.Second
	shutdownGrace  = 5 * time.Second
)

// Serve listens on addr with TLS and serves h until ctx ends. The listener
// is open when Serve returns; the channel reports how serving ended.
func Serve(ctx context.Context, addr string, h http.Handler, tlsConfig *tls.Config, log *slog.Logger) (net.Addr, <-chan error, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		IdleTimeout:       idleTimeout,
		ReadTimeout:       streamTimeout,
		WriteTimeout:      streamTimeout,
		ReadHeaderTimeout: headerTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	done := make(chan error, 1)
	go func() {
		err := srv.ServeTLS(ln, "", "")
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	log.Info("serving the node API", "addr", ln.Addr().String())
	return ln.Addr(), done, nil
}
