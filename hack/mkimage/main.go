// Command mkimage writes the images nodeagent's containerd instances need as
// `docker save`-style archives for `ctr -n k8s.io images import`:
//
//	go run ./hack/mkimage -pause _output/bin/pause -out _output/images
//
// writes pause.tar (localhost/nodeagent/pause:3.10) and busybox.tar
// (localhost/nodeagent/busybox:1) into -out.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/nodeagent/nodeagent/internal/imagebuild"
)

const (
	pauseRef   = "localhost/nodeagent/pause:3.10"
	busyboxRef = "localhost/nodeagent/busybox:1"
)

func main() {
	pause := flag.String("pause", "_output/bin/pause", "static pause binary (hack/pause/pause.c)")
	out := flag.String("out", "_output/images", "directory to write pause.tar and busybox.tar into")
	flag.Parse()

	if err := os.MkdirAll(*out, 0o755); err != nil {
		fatal(err)
	}
	pauseImg, err := imagebuild.Pause(*pause)
	if err != nil {
		fatal(err)
	}
	write(filepath.Join(*out, "pause.tar"), pauseRef, pauseImg)

	busyboxImg, err := imagebuild.Busybox()
	if err != nil {
		fatal(err)
	}
	write(filepath.Join(*out, "busybox.tar"), busyboxRef, busyboxImg)
}

func write(path, ref string, img v1.Image) {
	if err := imagebuild.WriteDockerArchive(path, ref, img); err != nil {
		fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		fatal(err)
	}
	fmt.Printf("%s  %s  %s\n", path, ref, d)
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mkimage:", err)
	os.Exit(1)
}
