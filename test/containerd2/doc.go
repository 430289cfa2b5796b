// Package containerd2 runs a representative set of test/e2e's tests on
// containerd 2 (hack/containerd.sh's instance "containerd2": containerd and
// runc that hack/containerd2.sh builds from the Go module proxy) instead of
// Debian's containerd 1.6: pod lifecycle, probes, exec and logs, volumes,
// restarts of the agent and of the runtime, cgroups and seccomp, and the
// PodSpec fields only a newer runtime allows (hostUsers: false, image
// volumes, supplementalGroupsPolicy: Strict).
//
// It reuses the tests rather than copying them: TestE2EOnContainerd2 runs
// `go test ./test/e2e -run <the set>` with NODEAGENT_E2E_RUNTIME=containerd2
// (test/framework.InstanceFromEnv) and reports each test of the set as a
// subtest of its own. On containerd 2 every test of the set must pass:
// a skip is a failure, as it would hide a feature the runtime lost.
//
// Like test/e2e it needs root and the machine's lock on the test
// runtimes (see the brief): run it alone.
package containerd2
