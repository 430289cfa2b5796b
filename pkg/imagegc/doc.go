// Package imagegc is the kubelet's image garbage collection
// (pkg/kubelet/images/image_gc_manager.go): it records when each image of
// the runtime was first seen and last used by a container, and removes the
// unused ones, least recently used first, when the image filesystem's use
// reaches imageGCHighThresholdPercent (down to imageGCLowThresholdPercent),
// and those unused for longer than imageMaximumGCAge whatever the use.
//
// What to remove is decided by the pure ComputePlan (UnusedPlan for the
// eviction manager's DeleteUnusedImages); the Manager reads the runtime,
// plans, removes, and reports events on the Node and
// kubelet_image_garbage_collected_total.
//
//	m, err := imagegc.New(imagegc.Config{
//		Policy:   imagegc.Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute},
//		Images:   rt, Containers: rt, FsStats: statsProvider,
//		SandboxImage: sandbox, Metrics: mtr,
//		Recorder: api.Events(), NodeName: nodeName,
//	})
//	go m.Run(ctx) // every Config.Period: the kubelet's ImageGCPeriod unless set
package imagegc
