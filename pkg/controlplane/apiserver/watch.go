package apiserver

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodeagent/nodeagent/pkg/controlplane/apiserver/responsewriters"
	"github.com/nodeagent/nodeagent/pkg/controlplane/storage"
)

// maxWatchTimeout bounds a watch like upstream's --min-request-timeout
// (1800 s, randomised there).
const maxWatchTimeout = 30 * time.Minute

// watch streams events as newline-separated JSON metav1.WatchEvents,
// each object a Table row when the client asked for Tables.
func (h *resourceHandler) watch(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	timeout := maxWatchTimeout
	if t := q.Get("timeoutSeconds"); t != "" {
		if n, err := strconv.Atoi(t); err == nil && n > 0 && time.Duration(n)*time.Second < timeout {
			timeout = time.Duration(n) * time.Second
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	filter, err := h.selectors(r)
	if err != nil {
		responsewriters.WriteError(w, err)
		return
	}
	if h.ri.Name != "" {
		filter = nameFilter(h.ri.Name, filter)
	}
	opts := storage.WatchOptions{
		ResourceVersion: q.Get("resourceVersion"),
		AllowBookmarks:  q.Get("allowWatchBookmarks") == "true",
		Filter:          filter,
	}
	if v := q.Get("sendInitialEvents"); v != "" {
		b := v == "true"
		opts.SendInitialEvents = &b
	}
	table := wantsTable(r) && h.res.Table != nil
	// Watchers of plain objects share each event's encoding.
	opts.Shared = !table
	wi, err := h.st.Watch(ctx, h.ri.Namespace, opts)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := json.NewEncoder(w)
	if err != nil {
		// Upstream answers 200 and sends the error (410 Gone) as an event.
		_ = enc.Encode(errorEvent(err))
		return
	}
	defer wi.Stop()
	if flusher != nil {
		flusher.Flush()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			if err := h.writeWatchEvent(w, enc, r, ev, table); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
	}
}

// writeWatchEvent writes one event as a line of JSON. A shared object's
// encoding is made once for every watcher of the event; the line is what
// json.Encoder writes for a metav1.WatchEvent.
func (h *resourceHandler) writeWatchEvent(w io.Writer, enc *json.Encoder, r *http.Request, ev watch.Event, table bool) error {
	so, ok := ev.Object.(*storage.SharedObject)
	if !ok {
		return enc.Encode(h.watchEvent(r, ev, table))
	}
	raw, err := so.Encode(func(obj runtime.Object) ([]byte, error) {
		setKind(obj, h.res.GVK)
		return json.Marshal(obj)
	})
	if err != nil {
		return enc.Encode(errorEvent(err))
	}
	line := make([]byte, 0, len(raw)+32)
	line = append(line, `{"type":`...)
	line = strconv.AppendQuote(line, string(ev.Type))
	line = append(line, `,"object":`...)
	line = append(line, raw...)
	line = append(line, "}\n"...)
	_, err = w.Write(line)
	return err
}

func (h *resourceHandler) watchEvent(r *http.Request, ev watch.Event, table bool) metav1.WatchEvent {
	if ev.Type == watch.Error {
		return errorEvent(apierrors.FromObject(ev.Object))
	}
	obj := ev.Object
	setKind(obj, h.res.GVK)
	if table && ev.Type != watch.Bookmark {
		obj = h.s.table(r, h.res, []runtime.Object{obj}, nil)
	}
	return metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Object: obj}}
}

func errorEvent(err error) metav1.WatchEvent {
	st := apierrors.NewInternalError(err).ErrStatus
	if s, ok := err.(apierrors.APIStatus); ok {
		st = s.Status()
	}
	st.Kind, st.APIVersion = "Status", "v1"
	return metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Object: &st}}
}
