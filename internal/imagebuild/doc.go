// Package imagebuild builds small container images locally, without a registry.
//
// No registry on the internet is reachable from the machines nodeagent is developed
// and tested on, so the images the runtime needs (the pod sandbox "pause" image and
// a busybox image for tests) are assembled here from files on the host and written
// as `docker save`-style archives that `ctr -n k8s.io images import` accepts. Tests
// can also push the v1.Image values to an in-process registry to exercise PullImage.
package imagebuild
