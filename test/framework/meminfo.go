package framework

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// HostMemTotal is the machine's memory in bytes (/proc/meminfo
// MemTotal), the agent's memory capacity.
func HostMemTotal() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no MemTotal in /proc/meminfo")
}
