#!/usr/bin/env bash
# The upstream control plane for test/realcluster.
#   hack/realcluster.sh build   build etcd, kube-apiserver, kube-controller-manager and
#                               kube-scheduler into _output/realcluster/bin, unless the
#                               binaries there were built from the same hack/realcluster
#                               go.mod and go.sum (a stamp file records them); prints the time.
#   hack/realcluster.sh bindir  print that directory.
#
# hack/realcluster is a module of its own (nodeagent.local/realcluster) requiring
# k8s.io/kubernetes v1.37.2 with its staging replace lines pointed at the published
# versions; etcd is go.etcd.io/etcd/server/v3 at the version that k8s.io/kubernetes
# pins (v3.7.0). The binaries are stamped with the release version the way upstream's
# hack/lib/version.sh stamps them, and built static (CGO_ENABLED=0), as upstream builds
# these three.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MOD="$ROOT/hack/realcluster"
OUT="$ROOT/_output/realcluster"
BIN="$OUT/bin"
GO="${GO:-go}"
KUBE_VERSION=v1.37.2
BINARIES=(etcd kube-apiserver kube-controller-manager kube-scheduler)

log() { echo "realcluster: $*"; }

stamp() {
	# What the binaries are built from: the module files, this script and the toolchain.
	cat "$MOD/go.mod" "$MOD/go.sum" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1
	"$GO" env GOVERSION
}

build() {
	local want have=""
	want="$(stamp)"
	[[ -f "$OUT/stamp" ]] && have="$(cat "$OUT/stamp")"
	local missing=0 b
	for b in "${BINARIES[@]}"; do
		[[ -x "$BIN/$b" ]] || missing=1
	done
	if [[ $missing == 0 && "$want" == "$have" ]]; then
		log "cached in $BIN (${BINARIES[*]}), 0 s"
		return 0
	fi
	local start=$SECONDS ldflags="-s -w" p
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=1 -X $p.gitMinor=37 -X $p.gitTreeState=clean"
	done
	mkdir -p "$BIN"
	rm -f "$OUT/stamp"
	log "building ${BINARIES[*]} ($KUBE_VERSION) into $BIN"
	(
		cd "$MOD"
		export CGO_ENABLED=0
		"$GO" build -ldflags "$ldflags" -o "$BIN/" \
			k8s.io/kubernetes/cmd/kube-apiserver \
			k8s.io/kubernetes/cmd/kube-controller-manager \
			k8s.io/kubernetes/cmd/kube-scheduler
		"$GO" build -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
	)
	echo "$want" >"$OUT/stamp"
	log "built in $((SECONDS - start)) s"
}

case "${1:-}" in
build) build ;;
bindir) echo "$BIN" ;;
*)
	echo "usage: $0 build|bindir" >&2
	exit 2
	;;
esac
