package podworker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	entry := func(stream, tag, text string) string {
		return fmt.Sprintf("2024-05-01T12:00:00.000000001Z %s %s %s\n", stream, tag, text)
	}
	var many, manyWant strings.Builder
	for i := range 100 {
		many.WriteString(entry("stdout", "F", fmt.Sprint(i)))
		if i >= 20 {
			fmt.Fprintf(&manyWant, "%d\n", i)
		}
	}
	var partials strings.Builder
	for range 90 {
		partials.WriteString(entry("stdout", "P", "ab"))
	}
	long := strings.Repeat("x", 3000)
	cases := []struct {
		name, log, want string
	}{
		{"a partial last entry", entry("stdout", "P", "DONE"), "DONE"},
		{"partial entries joined, streams alike",
			entry("stdout", "F", "starting") + entry("stderr", "P", "fatal: ") + entry("stderr", "F", "disk full") + entry("stdout", "P", "bye"),
			"starting\nfatal: disk full\nbye"},
		{"the last 80 entries", many.String(), manyWant.String()},
		{"partial entries count as lines", partials.String(), strings.Repeat("ab", 80)},
		{"the last 2 KiB", entry("stdout", "F", long), long[len(long)-2047:] + "\n"},
		{"an empty line", entry("stdout", "F", "") + entry("stdout", "F", "x"), "\nx\n"},
		{"empty log", "", ""},
	}
	dir := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, fmt.Sprintf("%d.log", i))
			if err := os.WriteFile(p, []byte(tc.log), 0o644); err != nil {
				t.Fatal(err)
			}
			if got := logTail(p, fallbackLogLines, fallbackLogBytes); got != tc.want {
				t.Errorf("logTail = %q, want %q", got, tc.want)
			}
		})
	}
	if got := logTail(filepath.Join(dir, "missing.log"), fallbackLogLines, fallbackLogBytes); got != "" {
		t.Errorf("missing log: %q", got)
	}
}
