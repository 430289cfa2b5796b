package stats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
}

// du counts allocated blocks (a sparse file is small), a hard-linked
// file once, and every inode, the directories included.
func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), 64<<10)
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub-link")); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(8 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bytes, inodes, err := diskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if bytes < 64<<10 || bytes >= 2*(64<<10)+(1<<20) {
		t.Errorf("bytes %d: want the 64KiB file once, the sparse file's holes not", bytes)
	}
	if inodes != 3 { // dir, a (once), sparse
		t.Errorf("inodes %d, want 3", inodes)
	}
	if _, _, err := diskUsage(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing path: %v", err)
	}
}

// The summary's pod volumes and ephemeral storage, as the kubelet's:
// every volume with metrics by name, the ephemeral-storage figure the
// sum of writable layers, container logs, the local ephemeral volumes
// (an emptyDir on disk, a configMap: not a secret), the pod's own log
// files and etc-hosts.
func TestPodVolumesAndEphemeralStorage(t *testing.T) {
	rt := fakeCRI()
	p := newTestProvider(t, rt)
	p.cfg.PodLogsDir = t.TempDir()
	root := p.cfg.RootDir
	vols := filepath.Join(root, "pods", "uid-web", "volumes")
	writeFile(t, filepath.Join(vols, "kubernetes.io~empty-dir", "data", "blob"), 256<<10)
	writeFile(t, filepath.Join(vols, "kubernetes.io~configmap", "cfg", "key"), 8<<10)
	writeFile(t, filepath.Join(vols, "kubernetes.io~secret", "tok", "token"), 128<<10)
	writeFile(t, filepath.Join(root, "pods", "uid-web", "etc-hosts"), 100)
	logs := filepath.Join(p.cfg.PodLogsDir, "shop_web_uid-web")
	writeFile(t, filepath.Join(logs, "app", "0.log"), 32<<10)
	writeFile(t, filepath.Join(logs, "side", "0.log"), 16<<10)
	writeFile(t, filepath.Join(logs, "pod.log"), 4<<10) // a pod-level file

	s, err := p.Summary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if web.PodRef.Name != "web" {
		t.Fatalf("pods %+v", s.Pods)
	}
	var names []string
	used := map[string]uint64{}
	for _, v := range web.VolumeStats {
		names = append(names, v.Name)
		used[v.Name] = *v.UsedBytes
		if v.CapacityBytes == nil || v.InodesUsed == nil {
			t.Errorf("volume %s without capacity or inodes: %+v", v.Name, v.FsStats)
		}
	}
	if len(names) != 3 || names[0] != "cfg" || names[1] != "data" || names[2] != "tok" {
		t.Fatalf("volumes %v", names)
	}
	if used["data"] < 256<<10 {
		t.Errorf("data volume used %d", used["data"])
	}
	du := func(p string) uint64 {
		b, _, err := diskUsage(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var want uint64
	for _, c := range web.Containers {
		if c.Logs == nil || c.Rootfs == nil {
			t.Fatalf("container %s: logs %v rootfs %v", c.Name, c.Logs, c.Rootfs)
		}
		if got := *c.Logs.UsedBytes; got != du(filepath.Join(logs, c.Name)) {
			t.Errorf("container %s logs %d", c.Name, got)
		}
		want += *c.Rootfs.UsedBytes + *c.Logs.UsedBytes
	}
	want += used["data"] + used["cfg"] + du(filepath.Join(logs, "pod.log")) + du(filepath.Join(root, "pods", "uid-web", "etc-hosts"))
	es := web.EphemeralStorage
	if es == nil || es.UsedBytes == nil || *es.UsedBytes != want {
		t.Fatalf("ephemeral storage %+v, want used %d (the secret's %d left out)", es, want, used["tok"])
	}
	if es.CapacityBytes == nil || es.InodesUsed == nil {
		t.Errorf("ephemeral storage without capacity or inodes: %+v", es)
	}
	// The CPU and memory summary measures no disk.
	cm, err := p.CPUAndMemory(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if w := cm.Pods[1]; w.VolumeStats != nil || w.EphemeralStorage != nil || w.Containers[0].Logs != nil {
		t.Errorf("cpu and memory summary with disk figures: %+v", w)
	}
	// Negative volumeStatsAggPeriod: no volume is measured.
	p.cfg.NoVolumeStats = true
	if s, err = p.Summary(context.Background()); err != nil || s.Pods[1].VolumeStats != nil {
		t.Errorf("without volume stats: %v %+v", err, s.Pods[1].VolumeStats)
	}
}
