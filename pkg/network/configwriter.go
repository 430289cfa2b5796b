package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Reasons of the NetworkUnavailable node condition, as upstream's route
// controller sets them, so that tools reading the condition see familiar
// values. Ready maps to NetworkUnavailable=False with ReasonRouteCreated;
// not ready to NetworkUnavailable=True with ReasonNoRouteCreated.
const (
	ReasonRouteCreated   = "RouteCreated"
	ReasonNoRouteCreated = "NoRouteCreated"
)

// MessageWaitingForPodCIDR is the status message until the node has pod CIDRs.
const MessageWaitingForPodCIDR = "waiting for spec.podCIDRs to be assigned to the node"

// ConfigWriterConfig configures a ConfigWriter.
type ConfigWriterConfig struct {
	// Dir is the runtime's CNI config directory, e.g. /etc/cni/net.d
	// (required; created if missing).
	Dir string
	// FileName must end in ".conflist". Default: "10-<network name>.conflist".
	FileName string
	// BinDirs are the runtime's CNI plugin directories (required), e.g.
	// /usr/lib/cni on Debian.
	BinDirs []string
	// CNI is the configuration to render; its PodCIDRs are ignored: Sync
	// supplies the node's.
	CNI    CNIConfig
	Logger *slog.Logger // default: slog.Default()
}

// ConfigWriter keeps the node's CNI config in step with its pod CIDRs and
// remembers how the last attempt went, for the node's status.
type ConfigWriter struct {
	cfg  ConfigWriterConfig
	path string
	log  *slog.Logger

	mu      sync.Mutex
	ready   bool
	reason  string
	message string
}

// NewConfigWriter checks cfg and fills its defaults.
func NewConfigWriter(cfg ConfigWriterConfig) (*ConfigWriter, error) {
	if cfg.Dir == "" {
		return nil, errors.New("CNI config writer: no config directory")
	}
	if len(cfg.BinDirs) == 0 {
		return nil, errors.New("CNI config writer: no plugin directories")
	}
	if err := checkNetworkName(cfg.CNI.NetworkName); err != nil {
		return nil, fmt.Errorf("CNI config writer: %w", err)
	}
	if cfg.FileName == "" {
		cfg.FileName = "10-" + cfg.CNI.NetworkName + ".conflist"
	}
	// The runtime reads other extensions as single-plugin configs.
	if !strings.HasSuffix(cfg.FileName, ".conflist") || cfg.FileName != filepath.Base(cfg.FileName) {
		return nil, fmt.Errorf("CNI config writer: file name %q must be a plain name ending in .conflist", cfg.FileName)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &ConfigWriter{
		cfg:     cfg,
		path:    filepath.Join(cfg.Dir, cfg.FileName),
		log:     cfg.Logger.With("component", "cniconfig"),
		reason:  ReasonNoRouteCreated,
		message: "CNI config not written yet",
	}, nil
}

// Path is the file the writer owns.
func (w *ConfigWriter) Path() string { return w.path }

// Bridge is the bridge device the configuration names.
func (w *ConfigWriter) Bridge() string {
	if w.cfg.CNI.Bridge == "" {
		return DefaultBridge
	}
	return w.cfg.CNI.Bridge
}

// Sync renders the config for podCIDRs, validates it against the plugin
// directories and writes it if it differs from the file in place. With no
// pod CIDRs yet it writes nothing and returns no error: the node is simply
// waiting, which Status reports. On any error the file in place is left as
// it was.
func (w *ConfigWriter) Sync(ctx context.Context, podCIDRs []string) (changed bool, err error) {
	if len(podCIDRs) == 0 {
		w.set(false, ReasonNoRouteCreated, MessageWaitingForPodCIDR)
		return false, nil
	}
	c := w.cfg.CNI
	c.PodCIDRs = podCIDRs
	data, err := RenderConflist(c)
	if err == nil {
		err = Validate(ctx, data, w.cfg.BinDirs)
	}
	if err == nil {
		err = os.MkdirAll(w.cfg.Dir, 0o755)
	}
	if err == nil {
		changed, err = WriteAtomic(w.cfg.Dir, w.cfg.FileName, data)
	}
	if err != nil {
		err = fmt.Errorf("CNI config %s for pod CIDRs %s: %w", w.path, strings.Join(podCIDRs, ","), err)
		w.set(false, ReasonNoRouteCreated, oneLine(err.Error()))
		return false, err
	}
	if changed {
		w.log.Info("wrote CNI config", "path", w.path, "podCIDRs", podCIDRs)
	}
	w.set(true, ReasonRouteCreated, fmt.Sprintf("CNI config %s written for pod CIDRs %s", w.path, strings.Join(podCIDRs, ",")))
	return changed, nil
}

// Status is the outcome of the last Sync in the terms of the node's
// NetworkUnavailable condition: ready means the condition is False.
func (w *ConfigWriter) Status() (ready bool, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ready, w.reason, w.message
}

func (w *ConfigWriter) set(ready bool, reason, message string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ready, w.reason, w.message = ready, reason, message
}

// oneLine joins the lines of errors.Join for a condition message.
func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }
