// Package file is the agent's static pod source: it turns the pod manifests
// of a directory (the kubelet's staticPodPath) into a stream of pod
// snapshots, like the kubelet's file config source. The snapshots go to
// podsource.Merger, which joins them with the API source's; without an API
// server they go to the pod manager as they are.
//
// Each non-hidden regular file holds one or more YAML or JSON documents of
// apiVersion v1, kind Pod. Pods get the kubelet's file-source defaults
// (name "<name>-<node>", namespace "default", spec.nodeName, config.*
// annotations, a NoExecute toleration, phase Pending), then podspec defaults
// and validation. Unlike the kubelet, the UID depends only on node, file
// path and pod namespace/name, so editing a manifest keeps the pod's UID;
// annotation podsource.ContentHashAnnotation changes instead. A file that
// stops parsing keeps the pods of its last good read; its error is logged
// and available from Source.Errors. Document numbers in messages are
// 1-based.
package file
