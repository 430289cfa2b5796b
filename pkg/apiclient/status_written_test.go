package apiclient

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// The trace's hook hears of a status once the API holds it, and not of
// one the API refused.
func TestStatusWrittenHook(t *testing.T) {
	p := apiPod("web", "u1", v1.PodPending)
	cs := fake.NewClientset(p)
	var written []v1.PodPhase
	s, err := NewStatusManager(StatusConfig{Client: cs, Logger: discard, Written: func(_ *v1.Pod, st *v1.PodStatus) {
		written = append(written, st.Phase)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.queue.ShutDown)
	s.OnStatus(fromAPI(p), running())
	drain(s)
	s.OnStatus(fromAPI(p), running()) // already in the API: still reached it
	drain(s)
	if len(written) != 2 || written[0] != v1.PodRunning {
		t.Errorf("written %v, want Running twice", written)
	}
	gone := apiPod("gone", "u2", v1.PodPending)
	s.OnStatus(fromAPI(gone), running())
	drain(s)
	if len(written) != 2 {
		t.Errorf("written %v: a status for a missing pod never reached the API", written)
	}
}
