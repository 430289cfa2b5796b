package endpointutil

import (
	"log/slog"

	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// PodHandler queues the keys of the services a pod event concerns (see
// ServicesForPodChange): the pod handler both endpoint controllers use.
func PodHandler(services corelisters.ServiceLister, queue workqueue.TypedInterface[string], log *slog.Logger) cache.ResourceEventHandlerFuncs {
	changed := func(old, cur any) {
		keys, err := ServicesForPodChange(services, old, cur)
		if err != nil {
			log.Warn("services of a changed pod", "err", err)
			return
		}
		for key := range keys {
			queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { changed(nil, obj) },
		UpdateFunc: changed,
		DeleteFunc: func(obj any) { changed(obj, nil) },
	}
}
