package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on
// Linux whatever the kernel's HZ).
const userHZ = 100

// usage is a process's resident memory and CPU time.
type usage struct {
	rssKiB  int64         // VmRSS
	anonKiB int64         // RssAnon: the private part of VmRSS (the rest maps the binary)
	hwmKiB  int64         // VmHWM: peak RSS
	cpu     time.Duration // utime+stime, cumulative (or a delta, see measureUsage)
}

// measureUsage returns the RSS at the end of window and the CPU time spent
// during it.
func measureUsage(ctx context.Context, pid int, window time.Duration) (usage, error) {
	before, err := readUsage(pid)
	if err != nil {
		return usage{}, err
	}
	if err := sleepCtx(ctx, window); err != nil {
		return usage{}, err
	}
	after, err := readUsage(pid)
	if err != nil {
		return usage{}, err
	}
	after.cpu -= before.cpu
	return after, nil
}

func readUsage(pid int) (usage, error) {
	var u usage
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "VmRSS":
			u.rssKiB = kib(v)
		case "RssAnon":
			u.anonKiB = kib(v)
		case "VmHWM":
			u.hwmKiB = kib(v)
		}
	}
	st, err := readStat(pid)
	u.cpu = st.self
	return u, err
}

// procStat is a process's CPU time from /proc/<pid>/stat.
type procStat struct {
	start    uint64        // starttime, in clock ticks after boot: tells a reused pid apart
	self     time.Duration // utime+stime
	children time.Duration // cutime+cstime: of the children it has waited for
}

func readStat(pid int) (procStat, error) {
	var s procStat
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// Fields after the command name (which may hold spaces), from field 3:
	// utime, stime, cutime and cstime are fields 14 to 17, starttime 22.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 > len(stat) {
		return s, fmt.Errorf("/proc/%d/stat: malformed", pid)
	}
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 20 {
		return s, fmt.Errorf("/proc/%d/stat: short", pid)
	}
	n := func(i int) int64 {
		v, _ := strconv.ParseInt(f[i], 10, 64)
		return v
	}
	s.self = time.Duration(n(11)+n(12)) * time.Second / userHZ
	s.children = time.Duration(n(13)+n(14)) * time.Second / userHZ
	s.start, _ = strconv.ParseUint(f[19], 10, 64)
	return s, nil
}

func kib(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
	return n
}

// findPidByArgs finds the process whose command line holds flag followed
// by value (the framework does not expose the agent's pid; its root
// directory is unique).
func findPidByArgs(flag, value string) (int, error) {
	for _, p := range processes() {
		for i := 0; i+1 < len(p.args); i++ {
			if p.args[i] == flag && p.args[i+1] == value {
				return p.pid, nil
			}
		}
	}
	return 0, fmt.Errorf("no process with %s %s", flag, value)
}

// otherAgents lists running `nodeagent agent` processes.
func otherAgents() []int {
	var pids []int
	for _, p := range processes() {
		if len(p.args) > 1 && filepath.Base(p.args[0]) == "nodeagent" && p.args[1] == "agent" {
			pids = append(pids, p.pid)
		}
	}
	return pids
}

type process struct {
	pid  int
	args []string
}

func processes() []process {
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	var out []process
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "cmdline"))
		if err != nil || len(b) == 0 {
			continue
		}
		out = append(out, process{pid, strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")})
	}
	return out
}
