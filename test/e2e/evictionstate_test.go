package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvictionStateSurvivesRestart: the eviction manager's checkpoint
// (<root>/eviction_manager_state.json) carries a memory pressure still in
// its transition period over an agent restart (restored before the pod
// manager starts, for admission: static pods are critical and admitted
// anyway, so the refusal of BestEffort pods is the unit test's), while
// thresholds the new configuration dropped are forgotten: the pressure
// clears after the transition period instead of lasting for good.
func TestEvictionStateSurvivesRestart(t *testing.T) {
	a := newAgentWith(t, "evictionPressureTransitionPeriod: 40s\n")
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// Less than 99% of the memory available: always met on this node.
	met := `{memory.available: "99%"}`
	if err := a.SetEvictionHard(met); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("NodeHasInsufficientMemory", podTimeout); err != nil {
		t.Fatal(err)
	}
	checkpoint := filepath.Join(a.RootDir, "eviction_manager_state.json")
	if b, err := os.ReadFile(checkpoint); err != nil || !strings.Contains(string(b), "MemoryPressure") {
		t.Fatalf("checkpoint %s: %v %s", checkpoint, err, b)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// A threshold never met from now on.
	path := filepath.Join(a.Dir, "config.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "evictionHard: "+met, `evictionHard: {memory.available: "1Ki"}`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("node pressure restored from the eviction checkpoint", podTimeout); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitLog("NodeHasSufficientMemory", 2*podTimeout); err != nil {
		t.Fatalf("the pressure of a dropped threshold did not clear after its transition period: %v", err)
	}
	b, err = os.ReadFile(checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	var st struct{ Conditions []string }
	if err := json.Unmarshal(b, &st); err != nil || len(st.Conditions) != 0 {
		t.Errorf("checkpoint after the pressure cleared: %v %s", err, b)
	}
}
