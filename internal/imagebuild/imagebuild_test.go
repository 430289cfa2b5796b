package imagebuild

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// layerEntries returns the headers (by name) and regular-file contents of img's only layer.
func layerEntries(t *testing.T, img v1.Image) ([]string, map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("got %d layers, want 1", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	var order []string
	hdrs := map[string]*tar.Header{}
	contents := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := hdrs[h.Name]; dup {
			t.Errorf("duplicate tar entry %q", h.Name)
		}
		order = append(order, h.Name)
		hdrs[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			contents[h.Name] = b
		}
	}
	return order, hdrs, contents
}

func configOf(t *testing.T, img v1.Image) *v1.ConfigFile {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	return cf
}

func TestFromFilesLayout(t *testing.T) {
	img, err := FromFiles([]File{
		{Path: "/usr/local/bin/tool", Mode: 0o755, Content: []byte("#!/bin/sh\n")},
		{Path: "etc/motd", Content: []byte("hello\n")},
		{Path: "/bin/sh", Linkname: "/bin/busybox"},
		{Path: "/tmp/", Mode: 0o1777},
	}, WithEntrypoint("/usr/local/bin/tool", "--flag"), WithCmd("arg"))
	if err != nil {
		t.Fatal(err)
	}
	order, hdrs, contents := layerEntries(t, img)

	wantDirs := map[string]int64{"usr/": 0o755, "usr/local/": 0o755, "usr/local/bin/": 0o755, "etc/": 0o755, "bin/": 0o755, "tmp/": 0o1777}
	for d, mode := range wantDirs {
		h, ok := hdrs[d]
		if !ok {
			t.Errorf("missing directory entry %q", d)
			continue
		}
		if h.Typeflag != tar.TypeDir || h.Mode != mode {
			t.Errorf("%q: type %c mode %o, want dir mode %o", d, h.Typeflag, h.Mode, mode)
		}
	}
	if h := hdrs["usr/local/bin/tool"]; h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o755 || string(contents[h.Name]) != "#!/bin/sh\n" {
		t.Errorf("tool entry wrong: %+v", h)
	}
	if h := hdrs["etc/motd"]; h == nil || h.Mode != 0o644 || string(contents[h.Name]) != "hello\n" {
		t.Errorf("motd entry wrong: %+v", h)
	}
	if h := hdrs["bin/sh"]; h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
		t.Errorf("sh entry wrong: %+v", h)
	}
	// Parents before children.
	seen := map[string]bool{}
	for _, n := range order {
		if dir := filepath.Dir(filepath.Clean(n)); dir != "." && !seen[dir+"/"] {
			t.Errorf("%q comes before its parent %q", n, dir+"/")
		}
		seen[n] = true
	}
	if len(order) != 9 {
		t.Errorf("got %d entries %v, want 9", len(order), order)
	}

	cf := configOf(t, img)
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	if !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/usr/local/bin/tool", "--flag"}) || !reflect.DeepEqual(cf.Config.Cmd, []string{"arg"}) {
		t.Errorf("entrypoint %q cmd %q", cf.Config.Entrypoint, cf.Config.Cmd)
	}
	if !reflect.DeepEqual(cf.Config.Env, []string{"PATH=" + DefaultPath}) {
		t.Errorf("env %q", cf.Config.Env)
	}
	if len(cf.RootFS.DiffIDs) != 1 {
		t.Errorf("diff ids %v", cf.RootFS.DiffIDs)
	}
}

func TestFromFilesDeterministic(t *testing.T) {
	files := []File{{Path: "/a/b", Content: []byte("x")}, {Path: "/c", Linkname: "a/b"}}
	a, err := FromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	b, err := FromFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Errorf("digests differ: %s %s", da, db)
	}
}

func TestFromFilesConflicts(t *testing.T) {
	for name, files := range map[string][]File{
		"duplicate":       {{Path: "/a"}, {Path: "a"}},
		"file then child": {{Path: "/a"}, {Path: "/a/b"}},
		"child then file": {{Path: "/a/b"}, {Path: "/a"}},
		"link then child": {{Path: "/a", Linkname: "x"}, {Path: "/a/b"}},
		"root":            {{Path: "/"}},
	} {
		if _, err := FromFiles(files); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	// An explicit directory after an implied one is fine and keeps its mode.
	img, err := FromFiles([]File{{Path: "/t/x"}, {Path: "/t/", Mode: 0o1777}})
	if err != nil {
		t.Fatal(err)
	}
	_, hdrs, _ := layerEntries(t, img)
	if hdrs["t/"].Mode != 0o1777 {
		t.Errorf("t/ mode %o", hdrs["t/"].Mode)
	}
}

func TestPause(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "pause")
	if err := os.WriteFile(bin, []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	img, err := Pause(bin)
	if err != nil {
		t.Fatal(err)
	}
	_, hdrs, contents := layerEntries(t, img)
	if h := hdrs["pause"]; h == nil || h.Mode != 0o755 || string(contents["pause"]) != "\x7fELF fake" {
		t.Errorf("pause entry wrong: %+v", h)
	}
	if ep := configOf(t, img).Config.Entrypoint; !reflect.DeepEqual(ep, []string{"/pause"}) {
		t.Errorf("entrypoint %q", ep)
	}
}

func TestBusybox(t *testing.T) {
	if _, err := os.Stat(BusyboxBinary); err != nil {
		t.Skipf("no %s (package busybox-static): %v", BusyboxBinary, err)
	}
	img, err := Busybox()
	if err != nil {
		t.Fatal(err)
	}
	_, hdrs, contents := layerEntries(t, img)
	host, _ := os.ReadFile(BusyboxBinary)
	if h := hdrs["bin/busybox"]; h == nil || h.Mode != 0o755 || len(contents["bin/busybox"]) != len(host) {
		t.Errorf("bin/busybox wrong: %+v", h)
	}
	for _, a := range []string{"sh", "sleep", "echo", "cat", "ls", "env", "httpd", "nc", "wget", "true",
		"false", "id", "hostname", "ps", "kill", "date", "mkdir", "touch", "test", "["} {
		h := hdrs["bin/"+a]
		if h == nil || h.Typeflag != tar.TypeSymlink || h.Linkname != "/bin/busybox" {
			t.Errorf("bin/%s: %+v", a, h)
		}
	}
	if h := hdrs["tmp/"]; h == nil || h.Typeflag != tar.TypeDir || h.Mode != 0o1777 {
		t.Errorf("tmp/: %+v", h)
	}
	if p := string(contents["etc/passwd"]); p == "" || !contains(p, "root:x:0:0:") || !contains(p, "nobody:x:65534:65534:") {
		t.Errorf("etc/passwd: %q", p)
	}
	if g := string(contents["etc/group"]); !contains(g, "root:x:0:") || !contains(g, "nobody:x:65534:") {
		t.Errorf("etc/group: %q", g)
	}
	if cmd := configOf(t, img).Config.Cmd; !reflect.DeepEqual(cmd, []string{"sh"}) {
		t.Errorf("cmd %q", cmd)
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestWriteDockerArchive(t *testing.T) {
	img, err := FromFiles([]File{{Path: "/hello", Content: []byte("hi")}}, WithCmd("/hello"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for ref, want := range map[string]string{
		"localhost/nodeagent/pause:3.10": "localhost/nodeagent/pause:3.10",
		"busybox:1":                      "docker.io/library/busybox:1",
		"127.0.0.1:5000/x/y":             "127.0.0.1:5000/x/y:latest",
	} {
		p := filepath.Join(dir, "img.tar")
		if err := WriteDockerArchive(p, ref, img); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var manifest []struct{ RepoTags []string }
		tr := tar.NewReader(f)
		for {
			h, err := tr.Next()
			if err != nil {
				t.Fatalf("manifest.json not found: %v", err)
			}
			if h.Name == "manifest.json" {
				if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		f.Close()
		if len(manifest) != 1 || !reflect.DeepEqual(manifest[0].RepoTags, []string{want}) {
			t.Errorf("%s: manifest %+v, want RepoTags [%s]", ref, manifest, want)
		}
		// The archive reads back as the same image.
		back, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		d1, _ := img.Digest()
		d2, _ := back.Digest()
		if d1 != d2 {
			t.Errorf("%s: digest %s after round trip, want %s", ref, d2, d1)
		}
	}
}

// AppendFiles adds one layer on top of the base's, the config kept.
func TestAppendFiles(t *testing.T) {
	base, err := FromFiles([]File{{Path: "/bin/tool", Content: []byte("x")}}, WithCmd("tool"))
	if err != nil {
		t.Fatal(err)
	}
	img, err := AppendFiles(base, []File{{Path: "/data", Content: []byte("payload")}})
	if err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("layers %d, %v; want 2", len(layers), err)
	}
	if cmd := configOf(t, img).Config.Cmd; len(cmd) != 1 || cmd[0] != "tool" {
		t.Errorf("cmd %v, want the base's", cmd)
	}
	top, err := mutate.Append(empty.Image, mutate.Addendum{Layer: layers[1]})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, contents := layerEntries(t, top); string(contents["data"]) != "payload" {
		t.Errorf("top layer contents %q", contents)
	}
}
