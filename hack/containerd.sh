#!/usr/bin/env bash
# Runs nodeagent's own containerd instances (there is no systemd on these machines).
#
#   hack/containerd.sh start  INSTANCE    start it (or reuse one that answers) and import our images
#   hack/containerd.sh stop   INSTANCE [--purge]
#                                         stop what we started, kill its containers and shims,
#                                         unmount its leftovers; --purge also deletes its data
#   hack/containerd.sh status INSTANCE    say whether its socket answers (exit 0 if it does)
#
# INSTANCE is
#   main  the standard socket /run/containerd/containerd.sock (crictl's default), root
#         /var/lib/containerd, state /run/containerd, config /etc/nodeagent/containerd,
#         CNI network "nodeagent" on bridge nodeagent0, 10.88.0.0/16;
#   test  socket /run/nodeagent-test/containerd.sock, everything under /var/lib/nodeagent-test
#         and /run/nodeagent-test, CNI network "nodeagent-test" on bridge natest0, 10.89.0.0/16;
#   test2 the same as test with "test2" in the names, bridge natest1, 10.90.0.0/16: the
#         second node of multi-node tests.
#   containerd2
#         the same as test with "containerd2" in the names, bridge natestc2, 10.91.0.0/16,
#         but containerd 2 and runc built by hack/containerd2.sh (_output/containerd2/bin,
#         built there if missing) with a version 3 config (the io.containerd.cri.v1.*
#         plugins) and NRI off: the second runtime the end-to-end tests run on.
#   node1 .. node9
#         the nodes of multi-node networking tests: the same layout as test with "nodeN"
#         in the names, but containerd runs in its own network namespace natest-nodeN,
#         whose eth0 (10.123.0.(10+N)/24, default route via 10.123.0.1) is the peer of the
#         veth natvN on the host bridge natestbr (10.123.0.1/24; created by the first node,
#         deleted with the last). Its CNI conf dir /var/lib/nodeagent-nodeN/cni/net.d starts
#         empty: the agent writes the network config from its Node's pod CIDR (until then
#         CRI reports NetworkReady=false). stop also deletes the namespace (and with it the
#         veth, the pods' bridge and every iptables rule made inside) and the processes
#         still running in it.
# They are independent (own socket, ttrpc socket, root, state, runc root, CNI config and
# IPAM store) and may run at the same time.
#
# Environment: IMAGES (default _output/images: pause.tar, busybox.tar, written by
# hack/setup.sh), SNAPSHOTTER (default: overlayfs if an overlay mount works, else native),
# START_TIMEOUT seconds (default 30).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGES="${IMAGES:-$ROOT/_output/images}"
START_TIMEOUT="${START_TIMEOUT:-30}"
PAUSE_IMAGE="localhost/nodeagent/pause:3.10"
CNI_BIN_DIR=/usr/lib/cni

usage() {
	echo "usage: $0 {start|stop [--purge]|status} {main|test|test2|containerd2|node1..node9}" >&2
	exit 2
}

log() { echo "containerd[$INSTANCE]: $*"; }
die() {
	echo "containerd[$INSTANCE]: error: $*" >&2
	exit 1
}

(($# >= 2)) || usage
ACTION=$1
INSTANCE=$2
PURGE=0
if (($# >= 3)); then
	[[ $ACTION == stop && $3 == --purge ]] || usage
	PURGE=1
fi

case "$INSTANCE" in
main)
	SOCK=/run/containerd/containerd.sock
	CD_ROOT=/var/lib/containerd
	CD_STATE=/run/containerd
	CONF_DIR=/etc/nodeagent/containerd
	CONFIG=$CONF_DIR/config.toml
	CERTS_DIR=$CONF_DIR/certs.d
	CNI_CONF_DIR=/etc/nodeagent/cni/net.d
	DATA_DIR=/var/lib/nodeagent/containerd-main # log, CNI IPAM store
	RUN_DIR=/run/nodeagent                      # pid file
	PIDFILE=$RUN_DIR/containerd-main.pid
	BRIDGE=nodeagent0
	SUBNET=10.88.0.0/16
	NETWORK=nodeagent
	;;
test | test2 | containerd2)
	# test2 is a second node for multi-node tests, containerd2 the second runtime: same
	# layout, own names.
	case $INSTANCE in test) N=0 ;; test2) N=1 ;; containerd2) N=2 ;; esac
	SOCK=/run/nodeagent-$INSTANCE/containerd.sock
	CD_ROOT=/var/lib/nodeagent-$INSTANCE/containerd
	CD_STATE=/run/nodeagent-$INSTANCE/state
	CONF_DIR=/run/nodeagent-$INSTANCE
	CONFIG=$CONF_DIR/config.toml
	CERTS_DIR=/var/lib/nodeagent-$INSTANCE/certs.d
	CNI_CONF_DIR=/var/lib/nodeagent-$INSTANCE/cni/net.d
	DATA_DIR=/var/lib/nodeagent-$INSTANCE
	RUN_DIR=/run/nodeagent-$INSTANCE
	PIDFILE=$RUN_DIR/containerd.pid
	BRIDGE=$([[ $INSTANCE == containerd2 ]] && echo natestc2 || echo "natest$N")
	SUBNET=10.$((89 + N)).0.0/16
	NETWORK=nodeagent-$INSTANCE
	;;
node[1-9])
	# A node of multi-node networking tests: the test layout, plus a network namespace.
	# Its state is always purged on stop: a sandbox left in containerd's metadata could
	# not be removed on the next start, when the CNI configuration (which stop empties,
	# the agent writes it) is gone.
	PURGE=1
	N=${INSTANCE#node}
	SOCK=/run/nodeagent-$INSTANCE/containerd.sock
	CD_ROOT=/var/lib/nodeagent-$INSTANCE/containerd
	CD_STATE=/run/nodeagent-$INSTANCE/state
	CONF_DIR=/run/nodeagent-$INSTANCE
	CONFIG=$CONF_DIR/config.toml
	CERTS_DIR=/var/lib/nodeagent-$INSTANCE/certs.d
	CNI_CONF_DIR=/var/lib/nodeagent-$INSTANCE/cni/net.d
	DATA_DIR=/var/lib/nodeagent-$INSTANCE
	RUN_DIR=/run/nodeagent-$INSTANCE
	PIDFILE=$RUN_DIR/containerd.pid
	# No CNI network of ours: the agent renders it into CNI_CONF_DIR.
	BRIDGE="" SUBNET="" NETWORK=""
	NETNS=natest-$INSTANCE
	NODE_IP=10.123.0.$((10 + N))
	HOST_VETH=natv$N
	;;
*) usage ;;
esac
LOG=$DATA_DIR/containerd.log
IPAM_DIR=$DATA_DIR/cni/ipam
RUNC_ROOT=$CD_STATE/runc
CRUN_ROOT=$CD_STATE/crun
CRUN=$(command -v crun || true)
# The programs of the instance: Debian's containerd 1.6 with a version 2 config, or for
# containerd2 those of hack/containerd2.sh with a version 3 config.
CONTAINERD=containerd CTR=ctr RUNC=runc SHIM="" CONFIG_VERSION=2
if [[ $INSTANCE == containerd2 ]]; then
	C2_BIN=$ROOT/_output/containerd2/bin
	CONTAINERD=$C2_BIN/containerd CTR=$C2_BIN/ctr RUNC=$C2_BIN/runc
	SHIM=$C2_BIN/containerd-shim-runc-v2 CONFIG_VERSION=3
fi

# The node network: one host bridge for all node instances, the host's address on it is
# every node's default gateway (and where a control plane on the host must listen).
NODE_BRIDGE=natestbr
NODE_GW=10.123.0.1
NODE_PREFIX=24
NODE_NET=10.123.0.0/$NODE_PREFIX
# Serialises bridge creation and deletion between nodes started or stopped in parallel.
NODE_LOCK=/run/nodeagent-natestbr.lock
NETNS=${NETNS:-}
# IN_NS runs a command in the instance's network namespace, in the host's mount namespace:
# not `ip netns exec`, which also unshares the mount namespace, so that tmpfs volumes the
# agent mounts would be invisible to containerd and runc (and theirs to the agent and to
# this script's unmount_ours). nsenter execs the command in place: its pid stays the same.
IN_NS=()
[[ -z $NETNS ]] || IN_NS=(nsenter "--net=/run/netns/$NETNS")

# answers: containerd's API answers on $SOCK.
answers() {
	[[ -S $SOCK ]] && timeout 5 "$CTR" --address "$SOCK" version >/dev/null 2>&1
}

# cri_ready: the CRI RuntimeService/Version call succeeds (an empty VersionRequest is
# five zero bytes of gRPC framing; curl speaks HTTP/2 over the unix socket). Falls back
# to `ctr plugins ls` when curl is missing.
cri_ready() {
	if command -v curl >/dev/null; then
		local out
		out=$(printf '\0\0\0\0\0' | timeout 5 curl -sS --http2-prior-knowledge --unix-socket "$SOCK" \
			-H 'content-type: application/grpc' -H 'te: trailers' --data-binary @- \
			-D - -o /dev/null http://localhost/runtime.v1.RuntimeService/Version 2>/dev/null) || return 1
		grep -qi '^grpc-status: *0' <<<"$out"
	else
		timeout 5 "$CTR" --address "$SOCK" plugins ls 2>/dev/null | grep -Eq 'io\.containerd\.grpc\.v1 +cri +.* ok'
	fi
}

# our_pid: prints the pid from $PIDFILE if that process is $CONTAINERD using $CONFIG.
our_pid() {
	local pid
	[[ -f $PIDFILE ]] || return 1
	pid=$(<"$PIDFILE")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/cmdline ]] || return 1
	local cmd
	cmd=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
	[[ $cmd == "$CONTAINERD --config $CONFIG"* ]] || return 1
	echo "$pid"
}

choose_snapshotter() {
	if [[ -n ${SNAPSHOTTER:-} ]]; then
		echo "$SNAPSHOTTER"
		return
	fi
	# containerd's overlayfs snapshotter needs overlay with several lower dirs on the
	# filesystem holding its root.
	local t
	mkdir -p "$CD_ROOT"
	t=$(mktemp -d "$CD_ROOT/.overlay-check.XXXXXX")
	mkdir -p "$t/l1" "$t/l2" "$t/u" "$t/w" "$t/m"
	if mount -t overlay overlay -o "lowerdir=$t/l1:$t/l2,upperdir=$t/u,workdir=$t/w" "$t/m" 2>/dev/null; then
		umount "$t/m"
		rm -rf "$t"
		echo overlayfs
	else
		rm -rf "$t"
		echo native
	fi
}

# crun_runtime TABLE: the CRI runtime handler "crun" (a RuntimeClass's handler: crun through
# the same runc v2 shim, its state under its own root) under the runtimes of TABLE (the CRI
# plugin's "containerd" table, named as the config version names it), or nothing when crun
# is not installed.
crun_runtime() {
	local table="plugins.$1.runtimes.crun" shim=""
	if [[ -z $CRUN ]]; then
		log "warning: crun is not installed (run hack/setup.sh): no runtime handler \"crun\"" >&2
		return
	fi
	[[ -z $SHIM ]] || shim=$'\n'"        runtime_path = \"$SHIM\""
	cat <<EOF

      [$table]
        runtime_type = "io.containerd.runc.v2"$shim

        [$table.options]
          BinaryName = "$CRUN"
          SystemdCgroup = false
          Root = "$CRUN_ROOT"
EOF
}

# free_cgroup2_controllers: on a hybrid cgroup host (v1 hierarchies on a tmpfs at
# /sys/fs/cgroup, cgroup2 at /sys/fs/cgroup/unified) mounts each controller the cgroup2
# hierarchy still holds (hugetlb on these machines) as a v1 hierarchy of its own: crun
# refuses to create a container while it does ("cgroups in hybrid mode not supported,
# drop all controllers from cgroupv2"). runc puts containers in the v1 hierarchies either
# way. Idempotent; a controller cgroup2 uses cannot move, and crun then keeps failing.
free_cgroup2_controllers() {
	local unified=/sys/fs/cgroup/unified c
	[[ -n $CRUN && $(stat -f -c %T /sys/fs/cgroup 2>/dev/null) == tmpfs && -r $unified/cgroup.controllers ]] || return 0
	for c in $(<"$unified/cgroup.controllers"); do
		mkdir -p "/sys/fs/cgroup/$c"
		mountpoint -q "/sys/fs/cgroup/$c" && continue
		if mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"; then
			log "mounted the $c controller as a cgroup v1 hierarchy (for crun)"
		else
			log "warning: cannot move the $c controller off cgroup2: crun will not run containers"
		fi
	done
}

# config_v2 SNAPSHOTTER: containerd 1.6's configuration (version 2, the CRI plugin
# io.containerd.grpc.v1.cri).
config_v2() {
	cat <<EOF
# Written by hack/containerd.sh ($INSTANCE); rewritten on every start.
version = 2
root = "$CD_ROOT"
state = "$CD_STATE"
oom_score = 0
disabled_plugins = [
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
  "io.containerd.internal.v1.tracing",
]
$(config_servers)

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$CD_ROOT/opt"

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$PAUSE_IMAGE"
    # This VM refuses a negative oom_score_adj; without this every RunPodSandbox fails.
    restrict_oom_score_adj = true
    # Keep pod network namespaces under this instance's state dir.
    netns_mounts_under_state_dir = true
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = "$CNI_BIN_DIR"
      conf_dir = "$CNI_CONF_DIR"
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "$1"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          Root = "$RUNC_ROOT"
$(crun_runtime '"io.containerd.grpc.v1.cri".containerd')

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = "$CERTS_DIR"
EOF
}

# config_v3 SNAPSHOTTER: containerd 2's configuration (version 3: the CRI plugin split
# into io.containerd.cri.v1.images, io.containerd.cri.v1.runtime and, for the streaming
# server, io.containerd.grpc.v1.cri), with the same choices as config_v2. NRI is off: its
# socket (/var/run/nri/nri.sock) would be shared with every other containerd 2, and the
# agent does not use it. The tracing, btrfs, devmapper and zfs plugins are not built in.
config_v3() {
	cat <<EOF
# Written by hack/containerd.sh ($INSTANCE); rewritten on every start.
version = 3
root = "$CD_ROOT"
state = "$CD_STATE"
oom_score = 0
$(config_servers)

[plugins]
  [plugins.'io.containerd.internal.v1.opt']
    path = "$CD_ROOT/opt"

  [plugins.'io.containerd.nri.v1.nri']
    disable = true

  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "$1"

    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"

    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = "$CERTS_DIR"

  [plugins.'io.containerd.cri.v1.runtime']
    # This VM refuses a negative oom_score_adj; without this every RunPodSandbox fails.
    restrict_oom_score_adj = true
    # Keep pod network namespaces under this instance's state dir.
    netns_mounts_under_state_dir = true

    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["$CNI_BIN_DIR"]
      conf_dir = "$CNI_CONF_DIR"
      max_conf_num = 1

    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"

      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        # This instance's shim, not the one on PATH (containerd 1.6's).
        runtime_path = "$SHIM"

        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$RUNC"
          SystemdCgroup = false
          Root = "$RUNC_ROOT"
$(crun_runtime "'io.containerd.cri.v1.runtime'.containerd")

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
EOF
}

# config_servers: the API sockets of the instance (the same keys in versions 2 and 3).
config_servers() {
	cat <<EOF

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[debug]
  address = ""
  level = "info"

[metrics]
  address = ""
EOF
}

render_config() {
	local snapshotter=$1
	mkdir -p "$CONF_DIR" "$CERTS_DIR" "$CNI_CONF_DIR" "$IPAM_DIR" "$DATA_DIR" "$RUN_DIR" "$CD_ROOT" "$CD_STATE"
	"config_v$CONFIG_VERSION" "$snapshotter" >"$CONFIG.tmp"
	mv "$CONFIG.tmp" "$CONFIG"

	if [[ -z $NETWORK ]]; then
		# A node instance: its agent writes the network config. Start without one (and
		# with an empty IPAM store) unless containers of an earlier run still live.
		if [[ -z $(our_shims) ]]; then
			rm -rf "${CNI_CONF_DIR:?}"/* "${IPAM_DIR:?}"/*
		fi
		return
	fi

	# CNI: bridge + host-local (own IPAM store per instance) + portmap. The reference
	# plugins 1.1.1 support CNI spec 1.0.0; containerd adds loopback itself.
	cat >"$CNI_CONF_DIR/10-$NETWORK.conflist.tmp" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "$NETWORK",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$IPAM_DIR"
      }
    },
    {
      "type": "portmap",
      "capabilities": {"portMappings": true}
    }
  ]
}
EOF
	mv "$CNI_CONF_DIR/10-$NETWORK.conflist.tmp" "$CNI_CONF_DIR/10-$NETWORK.conflist"
}

import_images() {
	local snapshotter=$1 f n=0
	for f in "$IMAGES/pause.tar" "$IMAGES/busybox.tar"; do
		if [[ ! -f $f ]]; then
			log "warning: $f missing (run hack/setup.sh); not imported"
			continue
		fi
		timeout 120 "$CTR" --address "$SOCK" -n k8s.io images import --snapshotter "$snapshotter" "$f" >/dev/null ||
			die "importing $f failed"
		n=$((n + 1))
	done
	((n == 0)) || log "imported $n image(s) into namespace k8s.io ($snapshotter)"
}

# snapshotter_in_use: the snapshotter named in our config, for a containerd that already runs.
snapshotter_in_use() {
	local s=""
	[[ -f $CONFIG ]] && s=$(sed -n 's/^ *snapshotter = "\(.*\)"/\1/p' "$CONFIG" | head -1)
	echo "${s:-${SNAPSHOTTER:-overlayfs}}"
}

# netns_live: /run/netns/$NETNS is a mounted network namespace (not a stale file).
netns_live() {
	[[ -e /run/netns/$NETNS ]] && nsenter "--net=/run/netns/$NETNS" true 2>/dev/null
}

# in_our_netns PID: PID runs in the network namespace /run/netns/$NETNS.
in_our_netns() {
	netns_live || return 1
	[[ $(readlink "/proc/$1/ns/net" 2>/dev/null) == "net:[$(stat -L -c %i "/run/netns/$NETNS")]" ]]
}

# lock_node_net: takes the lock that serialises work on the shared bridge (held until
# flock -u, or until the script exits, say on die).
lock_node_net() {
	exec {NODE_LOCK_FD}>"$NODE_LOCK"
	flock "$NODE_LOCK_FD"
}

# ensure_node_net: makes the node's network as the header describes. It reuses what is
# already right (a running node, or the leftovers of a crashed run) and recreates the
# veth pair unless its two ends are each other's peers.
ensure_node_net() {
	command -v nsenter >/dev/null || die "nsenter (util-linux) is not installed"
	lock_node_net
	# Refuse to shadow a network the host already uses.
	local dev
	dev=$(ip -4 -o route show exact "$NODE_NET" | sed -n 's/.* dev \([^ ]*\).*/\1/p' | head -1)
	[[ -z $dev || $dev == "$NODE_BRIDGE" ]] || die "the host already routes $NODE_NET via $dev"
	dev=$(ip -4 -o addr show to "$NODE_GW/32" | awk '{print $2}' | head -1)
	[[ -z $dev || $dev == "$NODE_BRIDGE" ]] || die "the host already has $NODE_GW on $dev"

	if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
		ip link add "$NODE_BRIDGE" type bridge
		log "created bridge $NODE_BRIDGE"
	fi
	ip addr replace "$NODE_GW/$NODE_PREFIX" dev "$NODE_BRIDGE"
	ip link set "$NODE_BRIDGE" up

	if ! netns_live; then
		# A file left without its namespace mount (or nothing): start afresh.
		ip netns delete "$NETNS" 2>/dev/null || true
		ip netns add "$NETNS"
		log "created network namespace $NETNS"
	fi

	# The host end's ifindex is what `ip -o link` shows after eth0@if in the namespace.
	local idx
	idx=$(cat "/sys/class/net/$HOST_VETH/ifindex" 2>/dev/null) || idx=""
	if [[ -z $idx ]] || ! ip -n "$NETNS" -o link show dev eth0 2>/dev/null | grep -q "^[0-9]*: eth0@if$idx:"; then
		ip link delete "$HOST_VETH" 2>/dev/null || true
		ip -n "$NETNS" link delete eth0 2>/dev/null || true
		ip link add "$HOST_VETH" type veth peer name eth0 netns "$NETNS"
		log "created veth $HOST_VETH on $NODE_BRIDGE, peer eth0 in $NETNS"
	fi
	ip link set "$HOST_VETH" master "$NODE_BRIDGE" up
	ip -n "$NETNS" link set lo up
	ip -n "$NETNS" addr replace "$NODE_IP/$NODE_PREFIX" dev eth0
	ip -n "$NETNS" link set eth0 up
	ip -n "$NETNS" route replace default via "$NODE_GW" dev eth0
	# A node routes its pods' traffic; a new namespace inherits the host's setting on
	# some kernels and not on others.
	"${IN_NS[@]}" sysctl -qw net.ipv4.ip_forward=1
	flock -u "$NODE_LOCK_FD"
}

# teardown_node_net: deletes the node's namespace and veth, after ending the processes
# still in the namespace (an agent, a test's helper: they belong to the node and would
# keep the namespace alive), and the bridge once no link is left on it.
teardown_node_net() {
	lock_node_net
	if netns_live; then
		local pids
		pids=$(ip netns pids "$NETNS" 2>/dev/null | tr '\n' ' ')
		if [[ -n ${pids// /} ]]; then
			log "ending process(es) left in $NETNS: $pids"
			# shellcheck disable=SC2086 # a list of pids
			kill -TERM $pids 2>/dev/null || true
			local i
			for ((i = 0; i < 50; i++)); do
				[[ -z $(ip netns pids "$NETNS" 2>/dev/null) ]] && break
				sleep 0.1
			done
			pids=$(ip netns pids "$NETNS" 2>/dev/null | tr '\n' ' ')
			# shellcheck disable=SC2086
			[[ -z ${pids// /} ]] || kill -KILL $pids 2>/dev/null || true
		fi
	fi
	# Deleting the host end deletes its peer: no need to wait for the namespace's
	# asynchronous destruction before looking at the bridge.
	if ip link show "$HOST_VETH" >/dev/null 2>&1; then
		ip link delete "$HOST_VETH" && log "deleted veth $HOST_VETH"
	fi
	if [[ -e /run/netns/$NETNS ]]; then
		ip netns delete "$NETNS" && log "deleted network namespace $NETNS"
	fi
	if ip link show "$NODE_BRIDGE" >/dev/null 2>&1 && [[ -z $(ip -o link show master "$NODE_BRIDGE") ]]; then
		ip link delete "$NODE_BRIDGE" && log "deleted bridge $NODE_BRIDGE (no node left on it)"
	fi
	flock -u "$NODE_LOCK_FD"
}

# node_info: says where a node instance is on the node network.
node_info() {
	[[ -n $NETNS ]] || return 0
	if netns_live; then
		log "node IP $NODE_IP in network namespace $NETNS (veth $HOST_VETH on $NODE_BRIDGE, gateway $NODE_GW)"
	else
		log "warning: network namespace $NETNS is missing"
	fi
}

# ensure_containerd: the instance's containerd is there; containerd2's is built (once: a
# no-op while the build is current).
ensure_containerd() {
	if [[ $INSTANCE == containerd2 ]]; then
		GO="${GO:-go}" bash "$ROOT/hack/containerd2.sh" build || die "building containerd 2 failed"
		return
	fi
	command -v containerd >/dev/null || die "containerd is not installed (run hack/setup.sh)"
}

start() {
	if [[ -n $NETNS ]]; then
		local running
		if running=$(our_pid); then
			in_our_netns "$running" ||
				die "containerd (pid $running) does not run in network namespace $NETNS; stop $INSTANCE first"
		fi
		ensure_node_net
	fi
	if answers; then
		local pid
		if pid=$(our_pid); then
			log "already running (pid $pid) on $SOCK"
		else
			log "a containerd already answers on $SOCK (not started by us): leaving it alone"
		fi
		import_images "$(snapshotter_in_use)"
		node_info
		return
	fi
	ensure_containerd
	[[ -x $CNI_BIN_DIR/bridge ]] || die "CNI plugins missing in $CNI_BIN_DIR (run hack/setup.sh)"

	local pid t0 snapshotter
	t0=$(date +%s%N)
	if ! pid=$(our_pid); then
		free_cgroup2_controllers
		snapshotter=$(choose_snapshotter)
		render_config "$snapshotter"
		rm -f "$SOCK" "$SOCK.ttrpc"
		echo "=== $(date -Is) start" >>"$LOG"
		# setsid: own session, so it outlives this script and its terminal.
		# shellcheck disable=SC2016 # expanded by the inner bash
		# IN_NS: a node's containerd (and so its CNI plugins and pods) lives in its namespace.
		setsid -f "${IN_NS[@]}" bash -c 'echo $$ >"$1"; exec "$4" --config "$2" >>"$3" 2>&1 </dev/null' \
			_ "$PIDFILE" "$CONFIG" "$LOG" "$CONTAINERD"
		local i
		for ((i = 0; i < 50; i++)); do
			pid=$(our_pid) && break
			sleep 0.1
		done
		[[ -n ${pid:-} ]] || die "containerd did not start; see $LOG"
		log "started containerd (pid $pid, snapshotter $snapshotter, log $LOG)"
	else
		snapshotter=$(snapshotter_in_use)
		log "containerd (pid $pid) is starting; waiting"
	fi

	local deadline=$((SECONDS + START_TIMEOUT))
	until answers && cri_ready; do
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$LOG" >&2
			die "containerd exited; see $LOG"
		fi
		((SECONDS < deadline)) || die "CRI did not answer on $SOCK within ${START_TIMEOUT}s; see $LOG"
		sleep 0.1
	done
	local t1
	t1=$(date +%s%N)
	log "CRI answers on $SOCK after $(((t1 - t0) / 1000000)) ms"
	import_images "$snapshotter"
	node_info
}

# kill_containers: kills every container in this instance's runc and crun roots (the
# pause and workload processes), so that nothing of the instance survives its shims.
kill_containers() {
	kill_runtime_containers "$RUNC" "$RUNC_ROOT"
	[[ -z $CRUN ]] || kill_runtime_containers "$CRUN" "$CRUN_ROOT"
}

# kill_runtime_containers RUNTIME ROOT: kills and deletes the containers of every
# namespace directory under ROOT (runc and crun take the same commands).
kill_runtime_containers() {
	local rt=$1 root=$2 nsdir id
	[[ -d $root ]] || return 0
	for nsdir in "$root"/*/; do
		[[ -d $nsdir ]] || continue
		for id in $("$rt" --root "$nsdir" list -q 2>/dev/null); do
			"$rt" --root "$nsdir" kill "$id" KILL >/dev/null 2>&1 || true
			"$rt" --root "$nsdir" delete --force "$id" >/dev/null 2>&1 || true
		done
	done
}

# our_shims: prints the pids of the containerd-shim-runc-v2 processes whose -address is $SOCK.
our_shims() {
	local p args
	for p in /proc/[0-9]*; do
		[[ -r $p/cmdline ]] || continue
		mapfile -d '' -t args <"$p/cmdline" 2>/dev/null || continue
		((${#args[@]})) || continue
		[[ ${args[0]##*/} == containerd-shim-runc-v2 ]] || continue
		local i
		for ((i = 1; i < ${#args[@]}; i++)); do
			if [[ ${args[i]} == -address && ${args[i + 1]:-} == "$SOCK" ]]; then
				echo "${p#/proc/}"
				break
			fi
		done
	done
}

# kill_shims: SIGKILLs our_shims.
kill_shims() {
	local pid n=0
	for pid in $(our_shims); do
		kill -KILL "$pid" 2>/dev/null && n=$((n + 1))
	done
	((n == 0)) || log "killed $n leftover shim(s)"
}

# unmount_ours: unmounts everything mounted under this instance's root or state dir,
# deepest first.
unmount_ours() {
	local m n=0
	while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		n=$((n + 1))
	done < <(awk -v r="$CD_ROOT/" -v s="$CD_STATE/" \
		'index($5, r) == 1 || index($5, s) == 1 { print $5 }' /proc/self/mountinfo | sort -r)
	((n == 0)) || log "unmounted $n leftover mount(s)"
}

# cleanup_network: once every pod of the instance is dead, drops the iptables rules
# and chains the bridge (ipMasq) and portmap plugins made for this instance's network
# (their rules carry the comment `name: "$NETWORK"`; a CNI DEL after the netns is gone
# cannot remove them), empties its host-local IPAM store and, for the test instances,
# deletes the bridge.
cleanup_network() {
	if [[ -n $NETNS ]]; then
		# Everything a node's CNI plugins made (bridge, iptables) lives in its namespace.
		rm -rf "${CNI_CONF_DIR:?}"/* "${IPAM_DIR:?}"/*
		teardown_node_net
		return
	fi
	command -v iptables >/dev/null || return 0
	local table rule chain n=0
	local -A chains=()
	for table in nat filter; do
		while IFS= read -r rule; do
			[[ $rule =~ -j\ (CNI-[A-Za-z0-9-]+) ]] && chains[$table ${BASH_REMATCH[1]}]=1
			# eval: iptables -S quotes the comment the way a shell would.
			eval "iptables -w -t $table ${rule/#-A/-D}" 2>/dev/null && n=$((n + 1))
		done < <(iptables -w -t "$table" -S 2>/dev/null | grep -F "name: \\\"$NETWORK\\\" id: " || true)
	done
	for chain in "${!chains[@]}"; do
		table=${chain%% *} chain=${chain#* }
		case $chain in CNI-HOSTPORT-* | CNI-FORWARD | CNI-ADMIN) continue ;; esac
		iptables -w -t "$table" -F "$chain" 2>/dev/null || true
		iptables -w -t "$table" -X "$chain" 2>/dev/null || true
	done
	((n == 0)) || log "removed $n iptables rule(s) of network $NETWORK"
	rm -rf "${IPAM_DIR:?}/$NETWORK"
	# The test instances' bridges are ours alone; main's may carry a user's setup.
	if [[ $INSTANCE != main ]] && ip link show "$BRIDGE" >/dev/null 2>&1; then
		ip link delete "$BRIDGE" && log "deleted bridge $BRIDGE"
	fi
}

stop() {
	local pid had_pidfile=0
	[[ -f $PIDFILE ]] && had_pidfile=1
	if pid=$(our_pid); then
		kill -TERM "$pid" 2>/dev/null || true
		local i
		for ((i = 0; i < 100; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			log "containerd (pid $pid) did not exit in 10s: killing it"
			kill -KILL "$pid" 2>/dev/null || true
			sleep 0.2
		fi
		log "stopped containerd (pid $pid)"
	elif answers; then
		log "the containerd on $SOCK was not started by this script: leaving it alone"
		return 0
	else
		log "not running"
		if [[ $INSTANCE == main ]] && ((!had_pidfile)); then
			# /run/containerd may belong to someone else's containerd: touch nothing.
			return 0
		fi
	fi
	rm -f "$PIDFILE"
	kill_containers
	kill_shims
	unmount_ours
	cleanup_network
	rm -f "$SOCK" "$SOCK.ttrpc"
	if ((PURGE)); then
		answers && die "something answers on $SOCK again; not purging"
		rm -rf "$CD_ROOT" "$CD_STATE" "$IPAM_DIR"
		log "purged $CD_ROOT $CD_STATE $IPAM_DIR"
	fi
}

status() {
	local pid=""
	pid=$(our_pid) || pid=""
	if answers; then
		local cri="CRI not ready"
		cri_ready && cri="CRI ready"
		if [[ -n $pid ]]; then
			log "running (pid $pid), answers on $SOCK, $cri"
		else
			log "answers on $SOCK (not started by this script), $cri"
		fi
		[[ -z $NETNS ]] || node_info
	else
		if [[ -n $pid ]]; then
			log "process $pid running but $SOCK does not answer"
		else
			log "not running ($SOCK does not answer)"
		fi
		return 1
	fi
}

case "$ACTION" in
start) start ;;
stop) stop ;;
status) status ;;
*) usage ;;
esac
