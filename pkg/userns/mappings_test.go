package userns

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// With a kubelet user, its subordinate range (the same for UIDs and GIDs),
// with the kubelet's errors for what getsubids would answer.
func TestKubeletMappingsFromSubIDs(t *testing.T) {
	for _, tc := range []struct {
		name, subuid, subgid string
		first, length        uint32
		want                 string
	}{
		{"one range", "root:100000:65536\nkubelet:65536:7208960\n", "kubelet:65536:7208960\n", 65536, 7208960, ""},
		{"mismatch", "kubelet:65536:7208960\n", "kubelet:131072:7208960\n", 0, 0, `mismatched subuids and subgids for user "kubelet"`},
		{"two ranges", "kubelet:65536:65536\nkubelet:262144:65536\n", "kubelet:65536:65536\nkubelet:262144:65536\n", 0, 0, "it must contain only one line"},
		{"no range", "root:100000:65536\n", "root:100000:65536\n", 0, 0, `invalid line ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			src := IDSource{
				UserExists: func(name string) (bool, error) { return name == "kubelet", nil },
				SubUIDFile: filepath.Join(dir, "subuid"), SubGIDFile: filepath.Join(dir, "subgid"),
			}
			if err := os.WriteFile(src.SubUIDFile, []byte(tc.subuid), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(src.SubGIDFile, []byte(tc.subgid), 0o644); err != nil {
				t.Fatal(err)
			}
			first, length, err := KubeletMappings(src, DefaultIDsPerPod)
			switch {
			case tc.want == "" && (err != nil || first != tc.first || length != tc.length):
				t.Errorf("= %d+%d, %v; want %d+%d", first, length, err, tc.first, tc.length)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
