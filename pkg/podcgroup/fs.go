package podcgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// FS writes cgroups under a cgroupfs mount root (/sys/fs/cgroup): cgroup
// v2 when the root itself is the unified hierarchy, else v1 with one
// hierarchy per controller below it (a hybrid host's v2 "unified" mount
// among them, which gets the directory and no limits, as runc does).
type FS struct{ Root string }

// Unified reports a cgroup v2 host.
func (f FS) Unified() bool {
	_, err := os.Stat(filepath.Join(f.Root, "cgroup.controllers"))
	return err == nil
}

// Exists reports whether cgroup name is present everywhere Apply puts it.
func (f FS) Exists(name string) bool {
	dirs, err := f.dirs(name)
	if err != nil || len(dirs) == 0 {
		return false
	}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return false
		}
	}
	return true
}

// Apply creates cgroup name, with its parents, and writes rc into it.
func (f FS) Apply(name string, rc ResourceConfig) error {
	dirs, err := f.dirs(name)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("create cgroup: %w", err)
		}
	}
	if f.Unified() {
		if err := f.enableControllers(name); err != nil {
			return err
		}
		return writeAll(filepath.Join(f.Root, name), v2Files(rc), hugetlbFiles(filepath.Join(f.Root, name), ".max", rc))
	}
	if err := f.inheritCpuset(name); err != nil {
		return err
	}
	return f.applyV1(name, rc)
}

// dirs are the directories cgroup name has: one per v1 hierarchy, or the
// one of v2.
func (f FS) dirs(name string) ([]string, error) {
	if f.Unified() {
		return []string{filepath.Join(f.Root, name)}, nil
	}
	entries, err := os.ReadDir(f.Root)
	if err != nil {
		return nil, fmt.Errorf("cgroup hierarchies: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() { // cpu -> cpu,cpuacct style links name a hierarchy twice
			out = append(out, filepath.Join(f.Root, e.Name(), name))
		}
	}
	return out, nil
}

type file struct{ name, value string }

func (f FS) applyV1(name string, rc ResourceConfig) error {
	cpu := filepath.Join(f.Root, "cpu", name)
	var cpuFiles []file
	if rc.CPUShares != nil {
		cpuFiles = append(cpuFiles, file{"cpu.shares", strconv.FormatUint(*rc.CPUShares, 10)})
	}
	if err := writeAll(cpu, cpuFiles); err != nil {
		return err
	}
	if err := writeCFS(cpu, rc); err != nil {
		return err
	}
	var mem, pids []file
	if rc.Memory != nil && *rc.Memory != 0 {
		mem = append(mem, file{"memory.limit_in_bytes", strconv.FormatInt(*rc.Memory, 10)})
	}
	if rc.PidsLimit != nil {
		pids = append(pids, file{"pids.max", pidsValue(*rc.PidsLimit)})
	}
	hugetlb := filepath.Join(f.Root, "hugetlb", name)
	return errors.Join(
		writeAll(filepath.Join(f.Root, "memory", name), mem),
		writeAll(filepath.Join(f.Root, "pids", name), pids),
		writeAll(hugetlb, hugetlbFiles(hugetlb, ".limit_in_bytes", rc)),
	)
}

// writeCFS sets period and quota; a period the kernel refuses with the
// old quota (EINVAL) is retried after the quota, as runc does.
func writeCFS(dir string, rc ResourceConfig) error {
	var period, quota []file
	if rc.CPUPeriod != nil {
		period = []file{{"cpu.cfs_period_us", strconv.FormatUint(*rc.CPUPeriod, 10)}}
	}
	if rc.CPUQuota != nil {
		quota = []file{{"cpu.cfs_quota_us", strconv.FormatInt(*rc.CPUQuota, 10)}}
	}
	if err := writeAll(dir, period, quota); err != nil {
		return writeAll(dir, quota, period)
	}
	return nil
}

func v2Files(rc ResourceConfig) []file {
	var out []file
	if rc.CPUShares != nil {
		out = append(out, file{"cpu.weight", strconv.FormatUint(SharesToWeight(*rc.CPUShares), 10)})
	}
	if rc.CPUQuota != nil || rc.CPUPeriod != nil {
		out = append(out, file{"cpu.max", cpuMax(rc)})
	}
	if rc.Memory != nil && *rc.Memory != 0 {
		v := "max"
		if *rc.Memory > 0 {
			v = strconv.FormatInt(*rc.Memory, 10)
		}
		out = append(out, file{"memory.max", v})
	}
	if rc.PidsLimit != nil {
		out = append(out, file{"pids.max", pidsValue(*rc.PidsLimit)})
	}
	return out
}

// cpuMax is cgroup v2's "<quota|max> [period]".
func cpuMax(rc ResourceConfig) string {
	v := "max"
	if rc.CPUQuota != nil && *rc.CPUQuota > 0 {
		v = strconv.FormatInt(*rc.CPUQuota, 10)
	}
	if rc.CPUPeriod != nil && *rc.CPUPeriod > 0 {
		v += " " + strconv.FormatUint(*rc.CPUPeriod, 10)
	}
	return v
}

func pidsValue(n int64) string {
	if n <= 0 {
		return "max"
	}
	return strconv.FormatInt(n, 10)
}

// hugetlbFiles limits every page size the controller offers in dir
// (hugetlb.<size><suffix>): the pod's request, else 0.
func hugetlbFiles(dir, suffix string, rc ResourceConfig) []file {
	if rc.HugePageLimit == nil {
		return nil
	}
	byName := map[string]int64{}
	for size, limit := range rc.HugePageLimit {
		if n, err := pageSizeName(size); err == nil {
			byName[n] = limit
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "hugetlb.*"+suffix))
	var out []file
	for _, m := range matches {
		size := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(m), "hugetlb."), suffix)
		if strings.Contains(size, ".") {
			continue // hugetlb.<size>.rsvd.*: reservations are not limited
		}
		out = append(out, file{filepath.Base(m), strconv.FormatInt(byName[size], 10)})
	}
	return out
}

func writeAll(dir string, lists ...[]file) error {
	for _, l := range lists {
		for _, f := range l {
			if err := os.WriteFile(filepath.Join(dir, f.name), []byte(f.value), 0o644); err != nil {
				return fmt.Errorf("set %s=%s: %w", f.name, f.value, err)
			}
		}
	}
	return nil
}

// enableControllers turns on, in every ancestor of name, the controllers
// the pod cgroup is limited by (cgroup v2 only delegates what the parent
// enables in cgroup.subtree_control).
func (f FS) enableControllers(name string) error {
	avail, err := os.ReadFile(filepath.Join(f.Root, "cgroup.controllers"))
	if err != nil {
		return fmt.Errorf("cgroup controllers: %w", err)
	}
	var want []string
	for _, c := range strings.Fields(string(avail)) {
		switch c {
		case "cpu", "memory", "pids", "hugetlb":
			want = append(want, c)
		}
	}
	dir := f.Root
	if err := enableIn(dir, want); err != nil {
		return err
	}
	for _, part := range segments(filepath.Dir(filepath.Clean("/" + name))) {
		dir = filepath.Join(dir, part)
		if err := enableIn(dir, want); err != nil {
			return err
		}
	}
	return nil
}

// segments are the components of a cgroup path ("/a/b" → a, b).
func segments(p string) []string {
	var out []string
	for _, s := range strings.Split(p, "/") {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func enableIn(dir string, controllers []string) error {
	p := filepath.Join(dir, "cgroup.subtree_control")
	have, err := os.ReadFile(p)
	if err != nil {
		return fmt.Errorf("cgroup subtree control: %w", err)
	}
	enabled := strings.Fields(string(have))
	var add []string
	for _, c := range controllers {
		if !contains(enabled, c) {
			add = append(add, "+"+c)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := os.WriteFile(p, []byte(strings.Join(add, " ")), 0o644); err != nil {
		return fmt.Errorf("enable %s in %s: %w", strings.Join(add, " "), dir, err)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// inheritCpuset fills the cpuset.cpus and cpuset.mems of the new cgroup
// v1 cpuset directories from their parents: an empty cpuset takes no
// tasks, and the kernel only copies them with cgroup.clone_children.
func (f FS) inheritCpuset(name string) error {
	parent := filepath.Join(f.Root, "cpuset")
	if _, err := os.Stat(filepath.Join(parent, "cpuset.cpus")); err != nil {
		return nil // no cpuset hierarchy
	}
	for _, part := range segments(name) {
		dir := filepath.Join(parent, part)
		for _, n := range []string{"cpuset.cpus", "cpuset.mems"} {
			if err := copyIfEmpty(filepath.Join(parent, n), filepath.Join(dir, n)); err != nil {
				return err
			}
		}
		parent = dir
	}
	return nil
}

func copyIfEmpty(from, to string) error {
	cur, err := os.ReadFile(to)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("read %s: %w", to, err)
	}
	if strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	v, err := os.ReadFile(from)
	if err != nil {
		return fmt.Errorf("read %s: %w", from, err)
	}
	if err := os.WriteFile(to, v, 0o644); err != nil {
		return fmt.Errorf("set %s: %w", to, err)
	}
	return nil
}
