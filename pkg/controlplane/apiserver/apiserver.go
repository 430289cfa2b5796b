package apiserver

import (
	"errors"
	"log/slog"
	"net/http"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Config holds what the API server needs.
type Config struct {
	// Etcd stores every object, under Prefix (default "/registry").
	Etcd   *clientv3.Client
	Prefix string
	Logger *slog.Logger
}

// Server is the API server's HTTP side. Authentication happens in front of
// it (the user is taken from the request context, see WithUser).
type Server struct {
	cfg Config
	mux *http.ServeMux
}

// New builds the API server; Run starts its watch caches.
func New(cfg Config) (*Server, error) {
	if cfg.Etcd == nil {
		return nil, errors.New("apiserver: Etcd is required")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "/registry"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Server{cfg: cfg, mux: http.NewServeMux()}, nil
}

// Handler serves the API.
func (s *Server) Handler() http.Handler { return s.mux }
