package imagebuild

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// DefaultPath is the PATH put in every image's environment.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// epoch is the modification time of every tar entry and the image's creation time,
// so that the same inputs always give the same digests.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// File is one entry of an image layer.
//
// Path is absolute or relative to the image root. A Path ending in "/" is a
// directory; a non-empty Linkname makes a symbolic link pointing at Linkname;
// anything else is a regular file holding Content. Mode holds the permission
// bits (including setuid/setgid/sticky); 0 means 0644 for files, 0755 for
// directories and 0777 for links. Entries are owned by root.
type File struct {
	Path     string
	Mode     int64
	Content  []byte
	Linkname string
}

// Option changes the image configuration built by FromFiles.
type Option func(*v1.Config)

// WithEntrypoint sets the image's Entrypoint.
func WithEntrypoint(args ...string) Option {
	return func(c *v1.Config) { c.Entrypoint = append([]string(nil), args...) }
}

// WithCmd sets the image's Cmd.
func WithCmd(args ...string) Option {
	return func(c *v1.Config) { c.Cmd = append([]string(nil), args...) }
}

// WithEnv appends "KEY=value" entries to the image's environment.
func WithEnv(env ...string) Option {
	return func(c *v1.Config) { c.Env = append(c.Env, env...) }
}

// FromFiles builds a single-layer linux/amd64 image holding files. Every
// directory implied by a path is present in the layer as a directory entry
// (mode 0755 unless given explicitly). Two entries for the same path are an
// error.
func FromFiles(files []File, opts ...Option) (v1.Image, error) {
	cfg := v1.Config{Env: []string{"PATH=" + DefaultPath}}
	for _, o := range opts {
		o(&cfg)
	}
	img, err := mutate.ConfigFile(empty.Image, &v1.ConfigFile{
		Architecture: "amd64",
		OS:           "linux",
		Created:      v1.Time{Time: epoch},
		Config:       cfg,
		RootFS:       v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, fmt.Errorf("imagebuild: config: %w", err)
	}
	return AppendFiles(img, files)
}

// AppendFiles is base with one more layer holding files, laid out as
// FromFiles lays them out (a test image on top of Busybox, say).
func AppendFiles(base v1.Image, files []File) (v1.Image, error) {
	layerTar, err := layerTar(files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return nil, fmt.Errorf("imagebuild: layer: %w", err)
	}
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: epoch},
			CreatedBy: "nodeagent imagebuild",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("imagebuild: append layer: %w", err)
	}
	return img, nil
}

// layerTar renders files as an uncompressed tar, parents before children.
func layerTar(files []File) ([]byte, error) {
	type entry struct {
		hdr      tar.Header
		content  []byte
		explicit bool
	}
	entries := map[string]*entry{}

	for _, f := range files {
		isDir := strings.HasSuffix(f.Path, "/") && f.Linkname == ""
		p := strings.TrimPrefix(path.Clean("/"+f.Path), "/")
		if p == "" {
			return nil, fmt.Errorf("imagebuild: invalid path %q", f.Path)
		}
		// Implied parents.
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if old, ok := entries[d]; !ok {
				entries[d] = &entry{hdr: tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755}}
			} else if old.hdr.Typeflag != tar.TypeDir {
				return nil, fmt.Errorf("imagebuild: %q is a %s but %q is under it", d, typeName(old.hdr.Typeflag), f.Path)
			}
		}
		e := &entry{explicit: true}
		switch {
		case f.Linkname != "":
			e.hdr = tar.Header{Typeflag: tar.TypeSymlink, Name: p, Linkname: f.Linkname, Mode: orDefault(f.Mode, 0o777)}
		case isDir:
			e.hdr = tar.Header{Typeflag: tar.TypeDir, Name: p + "/", Mode: orDefault(f.Mode, 0o755)}
		default:
			e.hdr = tar.Header{Typeflag: tar.TypeReg, Name: p, Mode: orDefault(f.Mode, 0o644), Size: int64(len(f.Content))}
			e.content = f.Content
		}
		if old, ok := entries[p]; ok {
			if old.explicit {
				return nil, fmt.Errorf("imagebuild: duplicate path %q", f.Path)
			}
			if e.hdr.Typeflag != tar.TypeDir {
				return nil, fmt.Errorf("imagebuild: %q is a %s but has entries under it", f.Path, typeName(e.hdr.Typeflag))
			}
		}
		entries[p] = e
	}

	names := make([]string, 0, len(entries))
	for p := range entries {
		names = append(names, p)
	}
	// Comparing path components puts every parent before its children.
	sort.Slice(names, func(i, j int) bool { return lessComponents(names[i], names[j]) })

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, p := range names {
		e := entries[p]
		hdr := e.hdr
		hdr.ModTime = epoch
		hdr.Format = tar.FormatPAX
		if err := tw.WriteHeader(&hdr); err != nil {
			return nil, fmt.Errorf("imagebuild: tar header %q: %w", p, err)
		}
		if len(e.content) > 0 {
			if _, err := tw.Write(e.content); err != nil {
				return nil, fmt.Errorf("imagebuild: tar content %q: %w", p, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func lessComponents(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] != bs[i] {
			return as[i] < bs[i]
		}
	}
	return len(as) < len(bs)
}

func orDefault(mode, def int64) int64 {
	if mode == 0 {
		return def
	}
	return mode
}

func typeName(t byte) string {
	switch t {
	case tar.TypeSymlink:
		return "symlink"
	case tar.TypeDir:
		return "directory"
	default:
		return "file"
	}
}

// Pause builds the pod sandbox image: the static binary at pauseBinary as /pause,
// with Entrypoint ["/pause"].
func Pause(pauseBinary string) (v1.Image, error) {
	bin, err := os.ReadFile(pauseBinary)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: pause binary: %w", err)
	}
	return FromFiles([]File{{Path: "/pause", Mode: 0o755, Content: bin}}, WithEntrypoint("/pause"))
}

// WriteDockerArchive writes img to path as a `docker save`-style tarball whose
// manifest names it ref. ref is written fully qualified ("busybox:1" becomes
// "docker.io/library/busybox:1"), which is the name containerd's CRI looks for
// after `ctr -n k8s.io images import`. The file is replaced atomically.
func WriteDockerArchive(path, ref string, img v1.Image) error {
	tag, err := FullTag(ref)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer os.Remove(tmp.Name())
	werr := tarball.Write(tag, img, tmp)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return fmt.Errorf("imagebuild: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	return nil
}

// FullTag parses ref as an image tag and returns it spelled the way containerd
// normalises it: registry included, Docker Hub as "docker.io", tag included.
func FullTag(ref string) (name.Tag, error) {
	t, err := name.NewTag(ref)
	if err != nil {
		return name.Tag{}, fmt.Errorf("imagebuild: image reference %q: %w", ref, err)
	}
	reg := t.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	full, err := name.NewTag(reg + "/" + t.RepositoryStr() + ":" + t.TagStr())
	if err != nil {
		return name.Tag{}, fmt.Errorf("imagebuild: image reference %q: %w", ref, err)
	}
	return full, nil
}
