package stats

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
)

// SummaryProvider gives the summary API (*Provider).
type SummaryProvider interface {
	CPUAndMemoryProvider
	Summary(ctx context.Context) (*Summary, error)
}

// SummaryHandler serves /stats/summary; ?only_cpu_and_memory=true
// restricts it as upstream's.
func SummaryHandler(p SummaryProvider, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		only, _ := strconv.ParseBool(r.URL.Query().Get("only_cpu_and_memory"))
		get := p.Summary
		if only {
			get = p.CPUAndMemory
		}
		s, err := get(r.Context())
		if err != nil {
			log.Error("stats summary", "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(s); err != nil {
			log.Debug("stats summary: write", "err", err)
		}
	})
}
