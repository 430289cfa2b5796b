package logrotate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	criv1 "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const running = criv1.ContainerState_CONTAINER_RUNNING

func TestRotatesLogAtMaxSize(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, rt, _ := setup(t, 5, c)
	write(t, c.LogPath, "0123456789") // exactly MaxSize

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, c.LogPath+"."+ts0); got != "0123456789" {
		t.Errorf("rotated file holds %q", got)
	}
	if got := read(t, c.LogPath); got != "" {
		t.Errorf("current log after reopen holds %q, want a new empty file", got)
	}
	if err := rt.AssertCalls([]string{"ContainerStatus", "ReopenContainerLog"}); err != nil {
		t.Error(err)
	}
}

func TestLeavesLogBelowMaxSize(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, rt, _ := setup(t, 5, c)
	write(t, c.LogPath, "012345678")

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := names(t, filepath.Dir(c.LogPath)); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("files %q, want only 0.log", got)
	}
	if err := rt.AssertCalls([]string{"ContainerStatus"}); err != nil {
		t.Error(err)
	}
}

func TestKeepsMaxFilesAndCompressesOlderRotations(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, _, _ := setup(t, 3, c)
	write(t, c.LogPath+".20260101-000001.gz", "oldest")
	write(t, c.LogPath+".20260101-000002.gz", "older")
	write(t, c.LogPath+".20260101-000003", "newest rotated")
	write(t, c.LogPath, "current log line")

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20260101-000003.gz", "0.log." + ts0}
	if got := names(t, filepath.Dir(c.LogPath)); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q (3 in all)", got, want)
	}
	if got := gunzip(t, c.LogPath+".20260101-000003.gz"); got != "newest rotated" {
		t.Errorf("compressed file holds %q", got)
	}
	if got := read(t, c.LogPath+"."+ts0); got != "current log line" {
		t.Errorf("newest rotated file (uncompressed) holds %q", got)
	}
}

func TestTwoFilesKeepsNoOlderRotation(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, _, _ := setup(t, 2, c)
	write(t, c.LogPath+".20260101-000003", "previous rotation")
	write(t, c.LogPath, "current log line")

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log." + ts0}
	if got := names(t, filepath.Dir(c.LogPath)); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

func TestRemovesLeftoversOfInterruptedCompression(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, _, _ := setup(t, 5, c)
	write(t, c.LogPath+".20260101-000001.tmp", "partial gzip")
	write(t, c.LogPath+".20260101-000002", "compressed, not yet removed")
	write(t, c.LogPath+".20260101-000002.gz", "")
	write(t, filepath.Join(filepath.Dir(c.LogPath), "1.log.20260101-000001"), "another container's")
	write(t, c.LogPath, "current log line")

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20260101-000002.gz", "0.log." + ts0, "1.log.20260101-000001"}
	if got := names(t, filepath.Dir(c.LogPath)); !slices.Equal(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
}

func TestFailedReopenUndoesTheRename(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, rt, _ := setup(t, 5, c)
	write(t, c.LogPath, "current log line")
	rt.InjectError("ReopenContainerLog", errors.New("runtime refused"))

	err := m.rotateIfDue(context.Background(), "c1")
	if err == nil || !strings.Contains(err.Error(), "runtime refused") {
		t.Fatalf("error = %v, want the reopen failure", err)
	}
	if got := names(t, filepath.Dir(c.LogPath)); !slices.Equal(got, []string{"0.log"}) {
		t.Errorf("files %q, want the rename undone", got)
	}
	if got := read(t, c.LogPath); got != "current log line" {
		t.Errorf("log holds %q after the rollback", got)
	}
	// The next pass succeeds.
	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if got := read(t, c.LogPath+"."+ts0); got != "current log line" {
		t.Errorf("rotated file holds %q", got)
	}
}

func TestMissingLogIsReopened(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, rt, _ := setup(t, 5, c)

	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(c.LogPath); err != nil {
		t.Errorf("log not recreated: %v", err)
	}
	if n := count(rt.GetCalls(), "ReopenContainerLog"); n != 1 {
		t.Errorf("%d reopen calls, want 1", n)
	}
}

func TestSameSecondRotationWaits(t *testing.T) {
	dir := t.TempDir()
	c := container(dir, "c1", running)
	m, rt, clk := setup(t, 5, c)
	write(t, c.LogPath, "first batch")
	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	write(t, c.LogPath, "second batch")
	// The first rotation is compressed to <ts0>.gz, so ts0 is taken.
	if err := m.rotateIfDue(context.Background(), "c1"); err == nil {
		t.Fatal("second rotation in the same second overwrote the first")
	}
	if got := gunzip(t, c.LogPath+"."+ts0+".gz"); got != "first batch" {
		t.Errorf("first rotation holds %q", got)
	}
	clk.Step(m.cfg.Interval)
	if err := m.rotateIfDue(context.Background(), "c1"); err != nil {
		t.Fatal(err)
	}
	if n := count(rt.GetCalls(), "ReopenContainerLog"); n != 2 {
		t.Errorf("%d reopen calls, want 2", n)
	}
}

func TestRemoveLogs(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "0.log")
	for _, f := range []string{log, log + ".20260101-000001.gz", log + ".20260101-000002", filepath.Join(dir, "1.log")} {
		write(t, f, "x")
	}
	if err := RemoveLogs(log); err != nil {
		t.Fatal(err)
	}
	if got := names(t, dir); !slices.Equal(got, []string{"1.log"}) {
		t.Errorf("files %q, want only 1.log", got)
	}
	if err := RemoveLogs(filepath.Join(dir, "gone", "0.log")); err != nil {
		t.Errorf("missing directory: %v", err)
	}
}
