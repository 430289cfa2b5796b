#!/usr/bin/env bash
# containerd 2 and a current runc, built from the Go module proxy, for hack/containerd.sh's
# instance "containerd2" (the second runtime the end-to-end tests run on; Debian 12 packages
# only containerd 1.6).
#   hack/containerd2.sh build   build containerd, containerd-shim-runc-v2, ctr and runc into
#                               _output/containerd2/bin, unless the binaries there were built
#                               from the same versions, script and toolchain (a stamp file
#                               records them); prints the time.
#   hack/containerd2.sh bindir  print that directory.
#
# Each program is `go install module/cmd@version` with the module's own go.mod (neither module
# has replace directives), so nothing but the Go toolchain is needed: the same on a clean clone.
# The build tags and version stamps are the ones the projects' Makefiles use: containerd without
# the btrfs, devmapper, zfs and tracing plugins (hack/containerd.sh disables those in 1.6 too),
# the shim with no_grpc; runc with seccomp (cgo, libseccomp-dev and pkg-config, which
# hack/setup.sh installs) and without libpathrs (a Rust library Debian does not package; runc
# then uses its Go implementation).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT="$ROOT/_output/containerd2"
BIN="$OUT/bin"
GO="${GO:-go}"
CONTAINERD_VERSION=v2.4.2
RUNC_VERSION=v1.5.3
CONTAINERD_MOD=github.com/containerd/containerd/v2
RUNC_MOD=github.com/opencontainers/runc
BINARIES=(containerd containerd-shim-runc-v2 ctr runc)

log() { echo "containerd2: $*"; }
die() {
	echo "containerd2: error: $*" >&2
	exit 1
}

stamp() {
	# What the binaries are built from: the versions (in this script) and the toolchain.
	sha256sum <"${BASH_SOURCE[0]}" | cut -d' ' -f1
	"$GO" env GOVERSION
}

up_to_date() {
	local b
	[[ -f $OUT/stamp && "$(cat "$OUT/stamp")" == "$1" ]] || return 1
	for b in "${BINARIES[@]}"; do
		[[ -x $BIN/$b ]] || return 1
	done
}

# go_install CGO TAGS LDFLAGS PACKAGE@VERSION...: go install into $BIN with the module's own
# dependencies (GOFLAGS from the environment could force -mod=vendor or similar: dropped).
go_install() {
	local cgo=$1 tags=$2 ldflags=$3
	shift 3
	GOBIN="$BIN" GOFLAGS=-buildvcs=false CGO_ENABLED="$cgo" \
		"$GO" install -trimpath -tags "$tags" -ldflags "$ldflags" "$@"
}

build_containerd() {
	local pkg=$CONTAINERD_MOD/version ldflags
	ldflags="-s -w -X $pkg.Version=$CONTAINERD_VERSION -X $pkg.Package=$CONTAINERD_MOD"
	go_install 0 "urfave_cli_no_docs no_btrfs no_devmapper no_zfs no_tracing" "$ldflags" \
		"$CONTAINERD_MOD/cmd/containerd@$CONTAINERD_VERSION" "$CONTAINERD_MOD/cmd/ctr@$CONTAINERD_VERSION"
	go_install 0 "urfave_cli_no_docs no_grpc" "$ldflags" "$CONTAINERD_MOD/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION"
}

build_runc() {
	command -v pkg-config >/dev/null && pkg-config --exists libseccomp ||
		die "runc needs libseccomp-dev and pkg-config (run hack/setup.sh)"
	go_install 1 "seccomp urfave_cli_no_docs" "-s -w" "$RUNC_MOD@$RUNC_VERSION"
}

build() {
	local want
	want="$(stamp)"
	if up_to_date "$want"; then
		log "cached in $BIN (containerd $CONTAINERD_VERSION, runc $RUNC_VERSION), 0 s"
		return 0
	fi
	local start=$SECONDS
	mkdir -p "$BIN"
	rm -f "$OUT/stamp"
	log "building containerd $CONTAINERD_VERSION and runc $RUNC_VERSION into $BIN"
	build_containerd
	build_runc
	"$BIN/containerd" --version >/dev/null || die "the built containerd does not run"
	"$BIN/runc" --version | grep -q '^libseccomp:' || die "the built runc has no seccomp support"
	echo "$want" >"$OUT/stamp"
	log "built in $((SECONDS - start)) s"
}

case "${1:-build}" in
build) build ;;
bindir) echo "$BIN" ;;
*)
	echo "usage: $0 [build|bindir]" >&2
	exit 2
	;;
esac
