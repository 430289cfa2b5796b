// Package framework runs the agent for end-to-end tests and benchmarks on
// the real runtime: it starts the dedicated "test" containerd instance,
// builds and runs the nodeagent binary with its own root, manifest and log
// directories, serves test images from an in-process OCI registry, and
// reads pods back through the agent's read-only API and the CRI.
package framework
