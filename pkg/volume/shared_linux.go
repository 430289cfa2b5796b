package volume

import (
	"fmt"
	"os"
	"strings"

	"golang.org/x/sys/unix"
)

// MakeRShared makes dir a recursively shared mount (bind-mounting it on
// itself first when it is not a mount point), as the kubelet does with its
// root directory: the runtime only accepts volume mounts with
// HostToContainer or Bidirectional propagation from a shared (or slave)
// mount, and the host's / is often private.
func MakeRShared(dir string) error {
	shared, mounted, err := mountPropagation(dir)
	if err != nil || shared {
		return err
	}
	if !mounted {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind-mount %s on itself: %w", dir, err)
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("make %s rshared: %w", dir, err)
	}
	return nil
}

// mountPropagation reads whether dir is a mount point and a shared one.
func mountPropagation(dir string) (shared, mounted bool, err error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, false, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 || f[4] != dir {
			continue
		}
		mounted, shared = true, false // the last entry for dir is the visible one
		for _, opt := range f[6:] {
			if opt == "-" {
				break
			}
			if strings.HasPrefix(opt, "shared:") {
				shared = true
			}
		}
	}
	return shared, mounted, nil
}
