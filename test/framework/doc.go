// Package framework runs the agent for end-to-end tests and benchmarks on
// the real runtime: it starts the dedicated "test" containerd instance,
// builds and runs the nodeagent binary with its own root, manifest and log
// directories, serves test images from an in-process OCI registry, and
// reads pods back through the agent's read-only API and the CRI. For
// multi-node networking tests, NodeInstance gives containerd instances in
// network namespaces of their own on a host bridge; an agent on one runs in
// that namespace with the node's IP. InstanceFromEnv gives the instance
// NODEAGENT_E2E_RUNTIME names: the test instance, or Containerd2Instance
// (containerd 2, built by hack/containerd2.sh).
package framework
