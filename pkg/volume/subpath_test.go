package volume

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSubPath(t *testing.T) {
	outside := t.TempDir()
	vol := t.TempDir()
	mustWrite(t, filepath.Join(vol, "conf/app.yaml"), "x")
	mustWrite(t, filepath.Join(vol, "..2024_01_01/key"), "v")
	links := map[string]string{
		"..data":     "..2024_01_01",
		"key":        "..data/key",
		"abs-escape": outside,
		"rel-escape": "../" + filepath.Base(outside),
		"etc":        "/etc",
		"inside":     "conf",
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(vol, name)); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		sub, want, wantErr string
	}{
		{sub: "conf", want: filepath.Join(vol, "conf")},
		{sub: "conf/app.yaml", want: filepath.Join(vol, "conf/app.yaml")},
		{sub: "key", want: filepath.Join(vol, "..2024_01_01/key")},
		{sub: "inside/app.yaml", want: filepath.Join(vol, "conf/app.yaml")},
		{sub: "new/deeper", want: filepath.Join(vol, "new/deeper")},
		{sub: "/etc", wantErr: "error SubPath `/etc` must not be an absolute path"},
		{sub: "../x", wantErr: "unable to provision SubPath `../x`: must not contain '..'"},
		{sub: "a/../../x", wantErr: "must not contain '..'"},
		{sub: "abs-escape", wantErr: "not within volume path"},
		{sub: "rel-escape", wantErr: "not within volume path"},
		{sub: "etc/passwd", wantErr: "not within volume path"},
		{sub: "abs-escape/created", wantErr: "not within volume path"},
	}
	for _, tt := range tests {
		got, err := SubPath(vol, tt.sub)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("SubPath(%q) = %q, %v; want error %q", tt.sub, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("SubPath(%q) = %q, %v; want %q", tt.sub, got, err, tt.want)
		}
	}
	if exists(filepath.Join(outside, "created")) {
		t.Error("a directory was created outside the volume")
	}
}

func TestSubPathCreatesWithVolumeMode(t *testing.T) {
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	vol := t.TempDir()
	if err := os.Chmod(vol, 0o777); err != nil {
		t.Fatal(err)
	}
	got, err := SubPath(vol, "a/b")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(vol, "a"), got} {
		if m := fileModeOf(t, p).Perm(); m != 0o777 {
			t.Errorf("%s mode %o, want the volume's 777", p, m)
		}
	}
}

func TestExpandSubPathExpr(t *testing.T) {
	env := map[string]string{"POD_NAME": "web-0", "NS": "prod", "EMPTY": ""}
	tests := []struct {
		expr, want, wantErr string
	}{
		{"$(POD_NAME)", "web-0", ""},
		{"logs/$(NS)/$(POD_NAME)", "logs/prod/web-0", ""},
		{"$$(POD_NAME)", "$(POD_NAME)", ""},
		{"cost$5", "cost$5", ""},
		{"open$(POD_NAME", "open$(POD_NAME", ""},
		{"end$", "end$", ""},
		{"$(MISSING)/$(EMPTY)", "", "missing value for EMPTY, MISSING"},
	}
	for _, tt := range tests {
		got, err := ExpandSubPathExpr(tt.expr, env)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%q: err %v, want %q", tt.expr, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
}
