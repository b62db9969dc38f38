# shellcheck shell=bash
# e2e/lib/node.sh — the local cluster's one node, sourced by e2e/local.
#
# A real node on this machine: containerd 2.x (built from its Go module) with Debian's
# runc and CNI plugins on a bridge with host-local IPAM, and kubelet, kube-scheduler
# and kube-proxy (iptables mode) from the control-plane binary. ../shared/NODE.md (in
# the project's workspace) lists what was checked and the errors met on the way; the
# comments below say which of them each setting answers.
#
# The node is a machine-wide singleton: kube-proxy's KUBE-* chains, the bridge and the
# pod cgroups are global, so two nodes would fight. NODE_LOCK names the state dir that
# owns it; `up` refuses while another live state dir holds it.
#
# Everything the node writes goes under $STATE/node, except what the kubelet and the
# CNI plugins write at fixed paths regardless of configuration; `node_down` removes
# those too (see node_clean_host).

NODE_NAME="meshscaler-e2e-node"
NODE_BRIDGE="mse2e0"
NODE_IP="10.244.0.1"
POD_CIDR="10.244.0.0/24"
SERVICE_CIDR="10.0.0.0/24"
NODE_LOCK="/run/meshscaler-e2e-node.state"
# The kubelet's default; bench/node.sh measures how many this machine holds.
NODE_MAX_PODS="${MESHSCALER_E2E_MAX_PODS:-110}"
# The kubelet puts pod cgroups under this root (cgroupRoot), so teardown can find
# and remove exactly ours in every hierarchy.
NODE_CGROUP_ROOT="/meshscaler-e2e"
# Sysctls the kubelet and kube-proxy change (NODE.md): saved at up, restored at down.
NODE_SYSCTLS="vm.overcommit_memory kernel.panic kernel.panic_on_oops net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables"
# Paths written regardless of the configured roots (NODE.md "Side effects").
NODE_FIXED_PATHS="/var/lib/kubelet /var/log/containers /var/log/pods /var/lib/cni /run/containerd"

# Modules `go install`ed into e2e/.bin for the node (pinned; none has replace
# directives, so `go install mod@version` works).
CONTAINERD_VERSION="v2.4.2"
NODE_MODULES="github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION
github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION
github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION
sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
sigs.k8s.io/metrics-server/cmd/metrics-server@v0.8.0"

NODE="$STATE/node"
CTR_SOCK="$NODE/containerd/containerd.sock"

ctr_() { "$BIN/ctr" --address "$CTR_SOCK" -n k8s.io "$@"; }
crictl_() { "$BIN/crictl" --runtime-endpoint "unix://$CTR_SOCK" --image-endpoint "unix://$CTR_SOCK" --timeout 30s "$@"; }

# go_install_all "MODULE@VERSION..." installs each module's command into e2e/.bin
# unless the recorded version (NAME.version) and linker flags (NAME.ldflags, those of
# tool_ldflags; absent when none) are the same.
go_install_all() {
  find_go
  mkdir -p "$BIN"
  local mod name flags log
  for mod in $1; do
    name="${mod%@*}"; name="${name##*/}"
    flags="$(tool_ldflags "$mod")"
    if [ -x "$BIN/$name" ] && [ "$(cat "$BIN/$name.version" 2>/dev/null)" = "$mod" ] \
      && [ "$(cat "$BIN/$name.ldflags" 2>/dev/null)" = "$flags" ]; then continue; fi
    say "installing $name ($mod, go install; a few minutes the first time)"
    local t0=$SECONDS
    log="$BIN/$name.install.log"
    : > "$log"
    # -v: the log names each package as it is compiled, and the progress line the last.
    if ! progress_run "installing $name (go install)" "~2-3 min" "cached" "$log" \
        env CGO_ENABLED=0 GOBIN="$BIN" "$GO" install -v -buildvcs=false -ldflags="-s -w${flags:+ $flags}" "$mod"; then
      tail -n 20 "$log" >&2
      die "could not install $name from $mod (log: $log)"
    fi
    echo "$mod" > "$BIN/$name.version"
    if [ -n "$flags" ]; then echo "$flags" > "$BIN/$name.ldflags"; else rm -f "$BIN/$name.ldflags"; fi
    say "  $name installed in $((SECONDS - t0)) s"
  done
}

node_install() {
  apt_install runc containernetworking-plugins iptables conntrack
  go_install_all "$NODE_MODULES"
}

# node_runs_for DIR: a kubelet of state dir DIR is alive.
node_runs_for() { pgrep -f -- "--config=$1/node/kubelet-config.yaml" >/dev/null 2>&1; }

# node_owns_host: this state dir holds the machine's node (or nobody does).
node_owns_host() {
  local holder
  holder="$(cat "$NODE_LOCK" 2>/dev/null || true)"
  [ -z "$holder" ] || [ "$holder" = "$STATE" ]
}

# node_lock_take: claim the machine's node for this state dir.
node_lock_take() {
  local other
  other="$(cat "$NODE_LOCK" 2>/dev/null || true)"
  if [ -n "$other" ] && [ "$other" != "$STATE" ]; then
    if node_runs_for "$other"; then
      die "the local node already runs for $other (one node per machine: run 'MESHSCALER_E2E_STATE=$other e2e/local down' first)"
    fi
    say "cleaning up after the node of $other, which is not running"
    if [ -d "$other" ]; then MESHSCALER_E2E_STATE="$other" "$E2E_DIR/local" down >/dev/null 2>&1 || true; fi
    node_clean_host
  fi
  echo "$STATE" > "$NODE_LOCK"
}

# ---------------------------------------------------------------------------------
# Certificates (called from make_pki)
# ---------------------------------------------------------------------------------

node_pki() {
  local pki="$STATE/pki" client="basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=clientAuth"
  new_cert scheduler "/CN=system:kube-scheduler" "$client"
  new_cert kube-proxy "/CN=system:kube-proxy" "$client"
  # The kubelet's identity: the Node authorizer and NodeRestriction know it by this
  # name and group.
  new_cert kubelet "/O=system:nodes/CN=system:node:$NODE_NAME" "$client"
  # The kubelet's serving certificate, for the API server's logs/exec/metrics calls
  # and metrics-server, which verify it against the CA (NODE.md item 4).
  new_cert kubelet-serving "/CN=$NODE_NAME" "basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,DNS:$NODE_NAME"
  # The API server's client certificate towards kubelets.
  new_cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  chmod 600 "$pki"/*.key
}

# The API server flags the node needs, at its first start (a restart to add them
# takes a minute with open watches: NODE.md item 6).
node_apiserver_flags() {
  local pki="$STATE/pki"
  printf '%s\n' \
    "--authorization-mode=Node,RBAC" \
    "--kubelet-preferred-address-types=InternalIP" \
    "--kubelet-client-certificate=$pki/apiserver-kubelet-client.crt" \
    "--kubelet-client-key=$pki/apiserver-kubelet-client.key" \
    "--kubelet-certificate-authority=$pki/ca.crt" \
    "--enable-aggregator-routing=true"
}

# ---------------------------------------------------------------------------------
# Host network: the bridge, forwarding, sysctls
# ---------------------------------------------------------------------------------

node_save_sysctls() {
  local k v
  [ -f "$NODE/sysctl.saved" ] && return 0
  for k in $NODE_SYSCTLS; do
    v="$(sysctl -n "$k" 2>/dev/null)" || continue
    printf '%s %s\n' "$k" "$v"
  done > "$NODE/sysctl.saved"
}

node_restore_sysctls() {
  local k v
  [ -f "$NODE/sysctl.saved" ] || return 0
  while read -r k v; do sysctl -q -w "$k=$v" >/dev/null 2>&1 || true; done < "$NODE/sysctl.saved"
}

# The bridge exists before anything starts: its address is the node's InternalIP and
# the kubelet's and kube-proxy's bind address (NODE.md item 7).
node_network_up() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
  fi
  ip addr replace "$NODE_IP/24" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
  sysctl -q -w net.ipv4.ip_forward=1 >/dev/null
  # Same-bridge traffic to a ClusterIP must pass iptables to be DNATed.
  sysctl -q -w net.bridge.bridge-nf-call-iptables=1 >/dev/null 2>&1 || true
  # A Docker engine sets the FORWARD policy to DROP (NODE.md item 9): accept the
  # bridge's traffic, with a comment that `down` finds the rules by.
  local dir
  for dir in -i -o; do
    iptables -C FORWARD "$dir" "$NODE_BRIDGE" -m comment --comment meshscaler-e2e -j ACCEPT 2>/dev/null \
      || iptables -I FORWARD "$dir" "$NODE_BRIDGE" -m comment --comment meshscaler-e2e -j ACCEPT
  done
}

node_network_down() {
  local dir
  for dir in -i -o; do
    while iptables -D FORWARD "$dir" "$NODE_BRIDGE" -m comment --comment meshscaler-e2e -j ACCEPT 2>/dev/null; do :; done
  done
  # Pods' veths went with their network namespaces; whatever is left goes with the bridge.
  local veth
  for veth in $(ip -o link show master "$NODE_BRIDGE" 2>/dev/null | awk -F': ' '{print $2}' | cut -d@ -f1); do
    ip link del "$veth" 2>/dev/null || true
  done
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
}

node_cni_config() {
  mkdir -p "$NODE/cni/net.d" "$NODE/cni/ipam" "$NODE/cni/cache"
  # No ipMasq and no portmap: pods talk only to each other and to this host, so the
  # plugins add no iptables rules of their own. host-local returns no routes unless
  # asked (NODE.md item 3): pods need a default route to reach ClusterIPs.
  cat > "$NODE/cni/net.d/10-meshscaler-e2e.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "meshscaler-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$NODE_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$POD_CIDR", "rangeStart": "10.244.0.10", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$NODE/cni/ipam"
      }
    }
  ]
}
EOF
}

# ---------------------------------------------------------------------------------
# containerd
# ---------------------------------------------------------------------------------

node_containerd_config() {
  mkdir -p "$NODE/containerd/root" "$NODE/containerd/state"
  cat > "$NODE/containerd/config.toml" <<EOF
# Written by e2e/local. Every path under the state dir; containerd 2 config format.
version = 3
root = "$NODE/containerd/root"
state = "$NODE/containerd/state"

[grpc]
  address = "$CTR_SOCK"

[ttrpc]
  address = "$CTR_SOCK.ttrpc"

[debug]
  level = "warn"

[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    # Images come only from local imports (imagePullPolicy IfNotPresent/Never).
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = "$PAUSE_IMAGE"

  [plugins.'io.containerd.cri.v1.runtime']
    # The VM withholds CAP_SYS_RESOURCE: without this every sandbox fails with
    # "can't get final child's PID from pipe: EOF" (NODE.md item 1).
    restrict_oom_score_adj = true
    enable_selinux = false
    # Network namespaces under the state dir, not /var/run/netns.
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = "$(command -v runc)"
          Root = "$NODE/containerd/runc"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = ["/usr/lib/cni"]
      conf_dir = "$NODE/cni/net.d"
      max_conf_num = 1

  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"

  [plugins.'io.containerd.nri.v1.nri']
    disable = true
EOF
}

node_start_containerd() {
  node_containerd_config
  say "starting containerd $CONTAINERD_VERSION"
  # The go-installed shim must come before Debian's 1.6 shim on PATH (NODE.md).
  start containerd env PATH="$BIN:$PATH" "$BIN/containerd" --config "$NODE/containerd/config.toml"
  wait_for containerd 30 ctr_ version
}

# ---------------------------------------------------------------------------------
# kubelet, kube-scheduler, kube-proxy
# ---------------------------------------------------------------------------------

node_kubelet_config() {
  local pki="$STATE/pki"
  mkdir -p "$NODE/kubelet" "$NODE/pod-logs" "$NODE/volume-plugins"
  # Pods get a resolv.conf that points nowhere outside: nothing in a pod may ask
  # this VM's resolver (NODE.md item 4); Services are reached by ClusterIP.
  : > "$NODE/resolv.conf"
  cat > "$NODE/kubelet-config.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $NODE_IP
port: $KUBELET_PORT
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CTR_SOCK
# cgroup v1 hybrid, no systemd (NODE.md).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP_ROOT
failSwapOn: false
protectKernelDefaults: false
# Lowering the kubelet's own oom_score_adj needs CAP_SYS_RESOURCE.
oomScoreAdj: 0
# Disk and memory look tight to the defaults on these VMs; images are never pulled,
# so image GC must not delete the imported ones.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
maxPods: $NODE_MAX_PODS
serializeImagePulls: false
podLogsDir: $NODE/pod-logs
volumePluginDir: $NODE/volume-plugins
resolvConf: $NODE/resolv.conf
clusterDomain: cluster.local
hairpinMode: hairpin-veth
shutdownGracePeriod: 0s
# Pods become Ready as soon as probes pass; status reaches the API server quickly.
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
EOF
}

# The kubelet wants its cgroupRoot to exist in every hierarchy (cgroup v1 here); a new
# cpuset cgroup starts with no CPUs and no memory nodes, so give it the root's.
node_cgroup_root() {
  local hier
  for hier in /sys/fs/cgroup/*; do
    [ -d "$hier" ] && [ ! -L "$hier" ] || continue
    mkdir -p "$hier$NODE_CGROUP_ROOT" 2>/dev/null || continue
    if [ -f "$hier/cpuset.cpus" ]; then
      cat "$hier/cpuset.cpus" > "$hier$NODE_CGROUP_ROOT/cpuset.cpus" 2>/dev/null || true
      cat "$hier/cpuset.mems" > "$hier$NODE_CGROUP_ROOT/cpuset.mems" 2>/dev/null || true
    fi
  done
}

node_start_kubelet() {
  node_cgroup_root
  node_kubelet_config
  write_kubeconfig "$NODE/kubelet.kubeconfig" "system:node:$NODE_NAME" cert kubelet
  say "starting kubelet (node $NODE_NAME, $NODE_IP:$KUBELET_PORT)"
  start kubelet env PATH="$BIN:$PATH" "$CP_BIN" kubelet \
    --config="$NODE/kubelet-config.yaml" \
    --kubeconfig="$NODE/kubelet.kubeconfig" \
    --root-dir="$NODE/kubelet" \
    --cert-dir="$NODE/kubelet/pki" \
    --hostname-override="$NODE_NAME" \
    --node-ip="$NODE_IP" \
    --v=1
}

node_start_scheduler() {
  write_kubeconfig "$NODE/scheduler.kubeconfig" system:kube-scheduler cert scheduler
  say "starting kube-scheduler"
  start kube-scheduler "$CP_BIN" kube-scheduler \
    --kubeconfig="$NODE/scheduler.kubeconfig" \
    --authentication-kubeconfig="$NODE/scheduler.kubeconfig" \
    --authorization-kubeconfig="$NODE/scheduler.kubeconfig" \
    --leader-elect=false \
    --bind-address=127.0.0.1 --secure-port="$SCHEDULER_PORT" \
    --v=1
}

node_start_proxy() {
  write_kubeconfig "$NODE/kube-proxy.kubeconfig" system:kube-proxy cert kube-proxy
  cat > "$NODE/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $NODE/kube-proxy.kubeconfig}
hostnameOverride: $NODE_NAME
mode: iptables
bindAddress: $NODE_IP
healthzBindAddress: 127.0.0.1:$PROXY_HEALTHZ_PORT
metricsBindAddress: 127.0.0.1:$PROXY_METRICS_PORT
clusterCIDR: $POD_CIDR
# localhostNodePorts would set route_localnet=1 (NODE.md).
iptables: {localhostNodePorts: false, masqueradeAll: false}
nodePortAddresses: ["$NODE_IP/32"]
# Leave the conntrack sysctls alone (0 = do not set), and the process' OOM score
# (lowering it needs CAP_SYS_RESOURCE).
conntrack: {maxPerCore: 0, min: 0}
oomScoreAdj: 0
EOF
  say "starting kube-proxy (iptables mode)"
  start kube-proxy "$CP_BIN" kube-proxy --config="$NODE/kube-proxy.yaml" --v=1
}

node_ready() {
  [ "$("$KUBECTL" --kubeconfig "$STATE/kubeconfig" get node "$NODE_NAME" \
    -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null)" = True ]
}

# node_up: everything of the node, after the API server answers.
node_up() {
  local t0=$SECONDS
  node_start_containerd
  images_import
  node_cni_config
  node_start_kubelet
  node_start_scheduler
  node_start_proxy
  wait_for kubelet 60 node_ready
  say "node $NODE_NAME Ready after $((SECONDS - t0)) s"
}

# ---------------------------------------------------------------------------------
# Teardown
# ---------------------------------------------------------------------------------

# unmount_under DIR: every mount at or below DIR, deepest first.
unmount_under() {
  local dir="$1" m
  [ -n "$dir" ] || return 0
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 {print $5}' /proc/self/mountinfo | sort -r \
    | while read -r m; do
      umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
    done
}

# kill_cgroup_tree: SIGKILL every process left in the node's pod cgroups (a pod
# whose sandbox survived crictl), then remove the cgroups, deepest first.
node_clean_cgroups() {
  local hier pid d
  for hier in /sys/fs/cgroup/*; do
    [ -d "$hier$NODE_CGROUP_ROOT" ] || continue
    find "$hier$NODE_CGROUP_ROOT" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  sleep 0.2
  for hier in /sys/fs/cgroup/*; do
    [ -d "$hier$NODE_CGROUP_ROOT" ] || continue
    find "$hier$NODE_CGROUP_ROOT" -depth -type d 2>/dev/null | while read -r d; do rmdir "$d" 2>/dev/null || true; done
  done
}

# node_stop_pods: stop and remove every pod sandbox through the CRI, so containerd
# unmounts rootfs and volumes, the CNI plugin releases the address and the network
# namespace goes. The kubelet is stopped first, or it would restart them.
node_stop_pods() {
  is_running containerd || return 0
  [ -x "$BIN/crictl" ] || return 0
  crictl_ rmp --all --force >/dev/null 2>&1 || true
  crictl_ rm --all --force >/dev/null 2>&1 || true
}

# node_clean_iptables: every KUBE-* chain in every table, IPv4 and IPv6, with the
# rules of the built-in chains that jump to them. kube-proxy --cleanup removes its own;
# the kubelet's (KUBE-FIREWALL, KUBE-KUBELET-CANARY, KUBE-IPTABLES-HINT) stay otherwise.
node_clean_iptables() {
  local ipt table rule chain
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null || continue
    for table in filter nat mangle raw; do
      "$ipt-save" -t "$table" 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' | while read -r rule; do
        # iptables-save quotes the way a shell does (comments with spaces).
        eval "$ipt -t $table -D ${rule#-A }" 2>/dev/null || true
      done || true
      for chain in $("$ipt-save" -t "$table" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do
        "$ipt" -t "$table" -F "$chain" 2>/dev/null || true
      done
      for chain in $("$ipt-save" -t "$table" 2>/dev/null | sed -n 's/^:\(KUBE-[^ ]*\) .*/\1/p'); do
        "$ipt" -t "$table" -X "$chain" 2>/dev/null || true
      done
    done
  done
}

# node_clean_host: what the node leaves outside the state dir (NODE.md "Side
# effects to undo"), for this state dir's node or one whose state dir is gone.
node_clean_host() {
  # kube-proxy's KUBE-* chains in every table, IPv4 and IPv6.
  if [ -x "$CP_BIN" ]; then "$CP_BIN" kube-proxy --cleanup >/dev/null 2>&1 || true; fi
  node_clean_iptables
  node_network_down
  node_clean_cgroups
  # The shims' sockets, and the fixed paths the kubelet and CNI use.
  rm -rf /run/containerd/s 2>/dev/null || true
  rm -rf /var/lib/cni/networks/meshscaler-e2e /var/lib/cni/results/meshscaler-e2e-* 2>/dev/null || true
  local p
  for p in $NODE_FIXED_PATHS; do
    # Created by us (recorded at up): remove; pre-existing: leave.
    if [ -d "$p" ] && ! grep -qxF "$p" "$NODE/preexisting" 2>/dev/null; then
      unmount_under "$p"
      rm -rf "$p"
    fi
  done
  if node_owns_host; then rm -f "$NODE_LOCK"; fi
}

node_record_preexisting() {
  local p
  [ -f "$NODE/preexisting" ] && return 0
  for p in $NODE_FIXED_PATHS; do [ -e "$p" ] && echo "$p"; done > "$NODE/preexisting" || true
}

# node_down: stop the node and undo everything it did to the host. Safe to run on a
# half-started node and to run twice.
node_down() {
  [ -d "$NODE" ] || return 0
  local name
  for name in kube-proxy kube-scheduler kubelet; do
    if [ -e "$PIDS/$name.pid" ]; then stop "$name"; say "stopped $name"; fi
  done
  node_stop_pods
  if [ -e "$PIDS/containerd.pid" ]; then stop containerd; say "stopped containerd"; fi
  # Shims that outlived containerd (a pod crictl could not remove): their command
  # lines name our socket.
  local pid
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*$CTR_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null || true; done
  unmount_under "$NODE"
  unmount_under "$STATE"
  # What is global (bridge, KUBE-* chains, pod cgroups, sysctls) belongs to whichever
  # state dir holds the node: never undo another one's.
  if node_owns_host; then
    node_clean_host
    node_restore_sysctls
  fi
}
