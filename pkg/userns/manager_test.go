package userns

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func first(int) int { return 0 }

func newTestManager(t *testing.T, dir string, blocks uint32) *Manager {
	t.Helper()
	m, err := New(Config{PodsDir: dir, FirstID: DefaultIDsPerPod, Length: blocks * DefaultIDsPerPod, MaxPods: 1, Rand: first})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hostID(t *testing.T, u *criv1.UserNamespace) uint32 {
	t.Helper()
	if u.Mode != criv1.NamespaceMode_POD || len(u.Uids) != 1 || len(u.Gids) != 1 {
		t.Fatalf("user namespace = %v", u)
	}
	uid, gid := u.Uids[0], u.Gids[0]
	if uid.ContainerId != 0 || uid.Length != DefaultIDsPerPod || uid.HostId != gid.HostId || gid.ContainerId != 0 || gid.Length != uid.Length {
		t.Fatalf("mappings = %v / %v", uid, gid)
	}
	return uid.HostId
}

// One block per pod, the same block again for the same pod, upstream's
// error once the range is used up, and the block back after Release.
func TestAllocateExhaustRelease(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, dir, 2)
	a, err := m.GetOrCreate("a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.GetOrCreate("b")
	if err != nil {
		t.Fatal(err)
	}
	ha, hb := hostID(t, a), hostID(t, b)
	if ha == hb || ha < DefaultIDsPerPod || hb < DefaultIDsPerPod || ha > 2*DefaultIDsPerPod || hb > 2*DefaultIDsPerPod {
		t.Fatalf("host IDs %d and %d: want the two blocks of the range", ha, hb)
	}
	if again, err := m.GetOrCreate("a"); err != nil || hostID(t, again) != ha {
		t.Fatalf("same pod again: %v, %v; want block %d", again, err, ha)
	}
	_, err = m.GetOrCreate("c")
	if err == nil || err.Error() != "create user namespace: could not find an empty slot to allocate a user namespace" {
		t.Fatalf("exhausted: err = %v", err)
	}
	m.Release("a")
	if _, err := os.Stat(filepath.Join(dir, "a", MappingsFile)); !os.IsNotExist(err) {
		t.Errorf("record of a released pod: %v, want it removed", err)
	}
	c, err := m.GetOrCreate("c")
	if err != nil || hostID(t, c) != ha {
		t.Fatalf("after release: %v, %v; want block %d", c, err, ha)
	}
}

// The record is the kubelet's file and JSON, and a new manager (an agent
// restart) reads it back: the same block for the pod, never for another.
func TestPersistAndReload(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, dir, 2)
	a, err := m.GetOrCreate("a")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "a", "userns"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string][]map[string]uint32
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	want := map[string]uint32{"hostId": hostID(t, a), "containerId": 0, "length": DefaultIDsPerPod}
	for _, k := range []string{"uidMappings", "gidMappings"} {
		if len(raw[k]) != 1 || raw[k][0]["hostId"] != want["hostId"] || raw[k][0]["length"] != want["length"] || len(raw[k][0]) != 3 {
			t.Errorf("%s = %v, want [%v]", k, raw[k], want)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "no-userns"), 0o755); err != nil {
		t.Fatal(err)
	}

	restarted := newTestManager(t, dir, 2)
	if again, err := restarted.GetOrCreate("a"); err != nil || hostID(t, again) != hostID(t, a) {
		t.Fatalf("after restart: %v, %v", again, err)
	}
	b, err := restarted.GetOrCreate("b")
	if err != nil || hostID(t, b) == hostID(t, a) {
		t.Fatalf("new pod after restart: %v, %v; must not get a's block", b, err)
	}
	if _, err := restarted.GetOrCreate("c"); err == nil {
		t.Error("a third pod got a block of a two-block range")
	}
}

// Records the kubelet would not have written stop the start, as they stop
// the kubelet's.
func TestReloadRejectsBadRecords(t *testing.T) {
	for _, tc := range []struct{ name, content, want string }{
		{"not JSON", "{", "invalid user namespace mappings file"},
		{"two mappings", `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536},{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[]}`,
			"no more than one mapping allowed"},
		{"uid and gid differ", `{"uidMappings":[{"hostId":65536,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
			"GID and UID mapping should be identical"},
		{"root not mapped", `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
			"UID 0 must be mapped"},
		{"wrong length", `{"uidMappings":[{"hostId":65536,"containerId":0,"length":1}],"gidMappings":[{"hostId":65536,"containerId":0,"length":1}]}`,
			"wrong user namespace length 1"},
		{"out of range", `{"uidMappings":[{"hostId":6553600,"containerId":0,"length":65536}],"gidMappings":[{"hostId":6553600,"containerId":0,"length":65536}]}`,
			"id 6553600 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "p", MappingsFile), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := New(Config{PodsDir: dir, FirstID: DefaultIDsPerPod, Length: 2 * DefaultIDsPerPod, MaxPods: 1})
			if err == nil || !strings.Contains(err.Error(), `record pod mappings for existing pod "p"`) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// Pods the agent no longer knows give their blocks back; so do recorded
// pods whose directory is gone.
func TestCleanupOrphans(t *testing.T) {
	dir := t.TempDir()
	m := newTestManager(t, dir, 3)
	for _, uid := range []types.UID{"kept", "orphan", "gone"} {
		if _, err := m.GetOrCreate(uid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := m.CleanupOrphans(map[types.UID]bool{"kept": true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "orphan", MappingsFile)); !os.IsNotExist(err) {
		t.Errorf("orphan's record: %v, want removed", err)
	}
	if len(m.usedBy) != 1 || m.usedBy["kept"] == 0 {
		t.Errorf("allocations left: %v, want only kept's", m.usedBy)
	}
	for _, uid := range []types.UID{"x", "y"} {
		if _, err := m.GetOrCreate(uid); err != nil {
			t.Errorf("%s: %v (the freed blocks)", uid, err)
		}
	}
}

// The range checks of the kubelet's MakeUserNsManager, with its messages.
func TestNewChecksRange(t *testing.T) {
	const unit = DefaultIDsPerPod
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"ids per pod", Config{IDsPerPod: 1000, FirstID: unit, Length: unit}, "kubelet user namespace length 1000 is not a multiple of 65536"},
		{"first ID", Config{FirstID: unit + 1, Length: unit}, "kubelet user assigned ID 65537 is not a multiple of 65536"},
		{"ID 0", Config{FirstID: 0, Length: 4 * unit}, "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{"length", Config{FirstID: unit, Length: unit + 1}, "kubelet user assigned IDs length 65537 is not a multiple of 65536"},
		{"max pods", Config{FirstID: unit, Length: 2 * unit, MaxPods: 3}, "kubelet user assigned IDs are not enough to support 3 pods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.PodsDir = t.TempDir()
			if _, err := New(tc.cfg); err == nil || err.Error() != tc.want {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// The default range, 110 pods on it, blocks of idsPerPod.
func TestDefaultRange(t *testing.T) {
	first, length, err := KubeletMappings(IDSource{UserExists: func(string) (bool, error) { return false, nil }}, 2*DefaultIDsPerPod)
	if err != nil || first != 2*DefaultIDsPerPod || uint64(length) != 1<<32-2*DefaultIDsPerPod {
		t.Fatalf("default range = %d+%d, %v", first, length, err)
	}
	m, err := New(Config{PodsDir: t.TempDir(), IDsPerPod: 2 * DefaultIDsPerPod, FirstID: first, Length: length, MaxPods: 110})
	if err != nil {
		t.Fatal(err)
	}
	u, err := m.GetOrCreate("a")
	if err != nil {
		t.Fatal(err)
	}
	if h := u.Uids[0].HostId; h%(2*DefaultIDsPerPod) != 0 || h < first || u.Uids[0].Length != 2*DefaultIDsPerPod {
		t.Errorf("mapping %v: want a block of 131072 IDs in the range", u.Uids[0])
	}
}
