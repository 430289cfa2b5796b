package framework

import (
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/nodeagent/nodeagent/internal/imagebuild"
)

// Registry is an in-process OCI registry on 127.0.0.1, which containerd
// pulls from over plain HTTP. Repositories under "private/" require basic
// auth with User and Password.
type Registry struct {
	Host     string // 127.0.0.1:port
	User     string
	Password string
	srv      *httptest.Server
}

// StartRegistry serves an empty registry.
func StartRegistry() (*Registry, error) {
	r := &Registry{User: "e2e", Password: "s3cret"}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	h := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if strings.HasPrefix(req.URL.Path, "/v2/private/") {
			u, p, ok := req.BasicAuth()
			if !ok || u != r.User || p != r.Password {
				w.Header().Set("WWW-Authenticate", `Basic realm="e2e"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		inner.ServeHTTP(w, req)
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r.srv = &httptest.Server{Listener: l, Config: &http.Server{Handler: h}}
	r.srv.Start()
	r.Host = l.Addr().String()
	return r, nil
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// PushBusybox pushes the busybox test image as <host>/<repo>:<tag> and
// returns that reference.
func (r *Registry) PushBusybox(repo, tag string) (string, error) {
	img, err := imagebuild.Busybox()
	if err != nil {
		return "", err
	}
	// A distinct image ID per reference: the CRI removes an image with all
	// its tags, so a pushed copy identical to the imported busybox would
	// take that one with it when a test removes what it pulled.
	cfg, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cfg = cfg.DeepCopy()
	cfg.Config.Env = append(cfg.Config.Env, "NODEAGENT_TEST_IMAGE="+repo+":"+tag)
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return "", err
	}
	return r.Push(repo, tag, img)
}

// Push pushes img as <host>/<repo>:<tag> and returns that reference.
func (r *Registry) Push(repo, tag string, img v1.Image) (string, error) {
	ref := fmt.Sprintf("%s/%s:%s", r.Host, repo, tag)
	parsed, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		return "", err
	}
	auth := remote.WithAuth(&authn.Basic{Username: r.User, Password: r.Password})
	if err := remote.Write(parsed, img, auth); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	return ref, nil
}

// GoImage builds the Go command in pkg (a package path under the
// repository, e.g. "./test/images/grpchealth") as a static binary and
// returns an image holding only it, as /<base name of pkg>, its entrypoint,
// and an empty /tmp.
func GoImage(pkg string) (v1.Image, error) {
	dir, err := os.MkdirTemp("", "nodeagent-goimage")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", bin, pkg)
	cmd.Dir = RepoRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("build %s: %v\n%s", pkg, err, out)
	}
	content, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	path := "/" + filepath.Base(pkg)
	return imagebuild.FromFiles([]imagebuild.File{{Path: path, Mode: 0o755, Content: content}, {Path: "/tmp/", Mode: 0o1777}},
		imagebuild.WithEntrypoint(path))
}
