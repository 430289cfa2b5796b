package imagebuild

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// BusyboxBinary is the host's static busybox (Debian package busybox-static).
var BusyboxBinary = "/bin/busybox"

// BusyboxApplets are linked into /bin when `busybox --list` cannot be run; when
// it can, every applet it lists is linked instead.
var BusyboxApplets = []string{
	"sh", "ash", "sleep", "echo", "cat", "ls", "env", "httpd", "nc", "wget",
	"true", "false", "id", "hostname", "ps", "kill", "date", "mkdir", "touch",
	"test", "[", "[[", "rm", "cp", "mv", "ln", "grep", "sed", "head", "tail",
	"wc", "uname", "whoami", "printf", "pwd", "stat", "chmod", "chown", "find",
	"xargs", "tr", "cut", "sort", "uniq", "tee", "mount", "umount", "df", "du",
	"free", "top", "ping", "ip", "ifconfig", "nslookup", "netstat", "vi", "awk",
	"seq", "yes", "timeout", "dd", "readlink", "realpath", "dirname", "basename",
	"tar", "gzip", "gunzip", "md5sum", "sha256sum", "nproc", "uptime", "sync",
}

// Busybox builds a small general-purpose test image: the host's static busybox
// as /bin/busybox with a symlink in /bin for each of its applets, /usr/bin/env,
// /etc/passwd and /etc/group (root and nobody), /root and /tmp (1777). Cmd ["sh"].
func Busybox() (v1.Image, error) {
	bin, err := os.ReadFile(BusyboxBinary)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: busybox: %w (install busybox-static)", err)
	}
	if err := checkStatic(BusyboxBinary); err != nil {
		return nil, err
	}

	applets := map[string]bool{}
	if out, err := exec.Command(BusyboxBinary, "--list").Output(); err == nil {
		for _, a := range strings.Fields(string(out)) {
			if !strings.Contains(a, "/") {
				applets[a] = true
			}
		}
	}
	if len(applets) == 0 {
		for _, a := range BusyboxApplets {
			applets[a] = true
		}
	}
	delete(applets, "busybox")
	names := make([]string, 0, len(applets))
	for a := range applets {
		names = append(names, a)
	}
	sort.Strings(names)

	files := []File{
		{Path: "/bin/busybox", Mode: 0o755, Content: bin},
		{Path: "/usr/bin/env", Linkname: "/bin/busybox"},
		{Path: "/etc/passwd", Content: []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")},
		{Path: "/etc/group", Content: []byte("root:x:0:\nnobody:x:65534:\n")},
		{Path: "/root/", Mode: 0o700},
		{Path: "/tmp/", Mode: 0o1777},
		{Path: "/var/", Mode: 0o755},
		{Path: "/home/", Mode: 0o755},
	}
	for _, a := range names {
		files = append(files, File{Path: "/bin/" + a, Linkname: "/bin/busybox"})
	}
	return FromFiles(files, WithCmd("sh"))
}

// checkStatic fails when the binary needs a dynamic loader, which an image
// holding only that binary would not have.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("imagebuild: %s: %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("imagebuild: %s is dynamically linked; install busybox-static", p)
		}
	}
	return nil
}
