// Package crash recovers panics where one request or one event would
// otherwise take the whole process (etcd, the API server, the
// controllers and the node agent share it) down with it.
//
// HTTP wraps a handler: a panic is logged at error with the request
// (method, path, user), answered with upstream's 500 when nothing was
// written yet, and counted. http.ErrAbortHandler, the sentinel a handler
// panics with to abort its response, is not a crash: it is passed on to
// net/http (which closes the connection without logging) and counted by
// the caller's abort hook, as upstream's WithPanicRecovery does.
//
// EventHandler and Do guard informer callbacks and controller work items:
// the panic is logged at error with the object or key and counted, and
// the caller goes on with the next item (client-go's processorListener
// does the same when utilruntime is told not to crash).
//
// Every recovered panic increments nodeagent_recovered_panics_total
// {component, kind}; Register adds the counter to a registry.
package crash
