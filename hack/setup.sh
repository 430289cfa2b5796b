#!/usr/bin/env bash
# Prepares this machine for nodeagent development, tests and CI (Debian 12, as root).
# Idempotent and non-interactive:
#   - installs the Debian packages the runtime needs, if missing;
#   - builds _output/bin/pause (hack/pause/pause.c) when missing or stale;
#   - writes _output/images/{pause,busybox}.tar (hack/mkimage) when missing or stale.
# hack/containerd.sh imports the image archives into containerd.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
GO="${GO:-go}"
BIN="$ROOT/_output/bin"
IMAGES="$ROOT/_output/images"

log() { echo "setup: $*"; }

if [[ $(id -u) -ne 0 ]]; then
	echo "setup: must run as root" >&2
	exit 1
fi

# --- Debian packages --------------------------------------------------------
# curl: hack/containerd.sh asks the CRI Version call over the socket with it (HTTP/2).
# systemd: only for systemd-analyze, which checks deploy/nodeagent.service in the tests.
# crun: a second OCI runtime, hack/containerd.sh's runtime handler "crun" (RuntimeClass).
# libseccomp-dev, pkg-config: hack/containerd2.sh builds runc with seccomp (cgo).
PACKAGES=(containerd runc crun containernetworking-plugins iptables nftables busybox-static gcc libc6-dev curl systemd
	libseccomp-dev pkg-config)
missing=()
for p in "${PACKAGES[@]}"; do
	if [[ "$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)" != "installed" ]]; then
		missing+=("$p")
	fi
done
if ((${#missing[@]})); then
	log "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
	log "packages present: ${PACKAGES[*]}"
fi

# Installing the containerd package may start a containerd where an init system
# runs; there is none here, and hack/containerd.sh starts its own instances.

# newer OUT IN...: true when OUT is missing or any IN is newer than it.
newer() {
	local out=$1 in
	shift
	[[ -e "$out" ]] || return 0
	for in in "$@"; do
		[[ "$in" -nt "$out" ]] && return 0
	done
	return 1
}

# --- pause binary -----------------------------------------------------------
mkdir -p "$BIN" "$IMAGES"
if newer "$BIN/pause" hack/pause/pause.c; then
	log "building $BIN/pause"
	gcc -static -Os -Wall -o "$BIN/pause" hack/pause/pause.c
else
	log "$BIN/pause up to date"
fi

# --- image archives ---------------------------------------------------------
srcs=("$BIN/pause" /bin/busybox hack/mkimage/main.go internal/imagebuild/*.go go.mod)
if newer "$IMAGES/pause.tar" "${srcs[@]}" || newer "$IMAGES/busybox.tar" "${srcs[@]}"; then
	log "writing image archives to $IMAGES"
	"$GO" run ./hack/mkimage -pause "$BIN/pause" -out "$IMAGES" | sed 's/^/setup:   /'
else
	log "$IMAGES/{pause,busybox}.tar up to date"
fi
