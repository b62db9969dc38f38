# shellcheck shell=bash source-path=SCRIPTDIR
# shellcheck disable=SC2034,SC2154,SC2016  # sets names the sourced libs read; up.sh/down.sh set here, repo, state; scripts run in containers are single-quoted
# e2e/kind/offline.sh — kind with no container registry, sourced by up.sh and down.sh.
#
# kind's node image cannot be pulled here, and `kind build node-image` fetches etcd,
# coredns, pause and kindnetd from registries whatever is present locally
# (../shared/KIND.md, finding 2). So this makes the node image itself, doing by hand
# what kind's build does ("route B"):
#
#   1. Go programs, all from the module proxy: the kind CLI (v0.33.0), every Kubernetes
#      program as one binary dispatching on its name (e2e/kind/node, the release of
#      e2e/controlplane), containerd/ctr/shim and crictl (e2e/local's versions), CoreDNS.
#   2. Component images, under the exact names kubeadm and kind's containerd config
#      ask for: kube-apiserver, kube-controller-manager, kube-scheduler, kube-proxy and
#      etcd are one image (Debian minbase + iptables + the binary and its links);
#      coredns (the binary alone); pause (e2e/images/pause/pause.c, static).
#   3. The node image: e2e/kind/images/node/Dockerfile from the debootstrap base
#      (e2e/lib/images.sh) and kind's own node files (images/base/files of the kind
#      module), then the component images imported into the node's containerd in a
#      running container and `docker commit`, as kind's build does.
#
# Everything is tagged by a hash of what it is made from and kept in the Docker engine
# whose data root is $KIND_CACHE/docker, so a later run reuses it.
#
# The Docker engine is this script's own (Debian's docker.io), never another one on
# the machine: its own data root, exec root, pid file and socket. It runs in two modes:
#   build    --iptables=false --bridge=none: builds use the host network, and nothing
#            in the host's network changes, so it needs no lock;
#   cluster  iptables on (kind's network is a Docker bridge with NAT): it changes the
#            host's firewall, so it runs only while holding the machine's node lock
#            (MESHSCALER_NODE_LOCK, /tmp/ms-node.lock), and down.sh restores the
#            iptables rules and sysctls saved before it started.
#
# The caller sets: here (e2e/kind), repo, state (e2e/kind/.state), and defines say, die.

KIND_VERSION=v0.33.0
K8S_VERSION=v1.37.2
E2E_DIR="$repo/e2e"
REPO="$repo"
KIND_CACHE="${MESHSCALER_E2E_CACHE:-$E2E_DIR/.cache}/kind"
KIND_BIN="$KIND_CACHE/bin"
KIND_DOCKER_ROOT="$KIND_CACHE/docker"
KIND_DOCKER_RUN="$state/docker"
KIND_NODE_IMAGE="localhost/meshscaler-e2e/kind-node:$K8S_VERSION"
NODE_LOCK_FILE="${MESHSCALER_NODE_LOCK:-/tmp/ms-node.lock}"
# The recipe of the offline node image: bump it when a step changes in a way the
# hashed inputs do not show.
KIND_NODE_RECIPE=r1
# e2e/lib/images.sh and apt.sh want these names.
BIN="$KIND_BIN"
STATE="$state"
PROGRESS_PREFIX="[kind]"

# shellcheck source=../lib/progress.sh
. "$E2E_DIR/lib/progress.sh"
# shellcheck source=../lib/apt.sh
. "$E2E_DIR/lib/apt.sh"
# shellcheck source=../lib/images.sh
. "$E2E_DIR/lib/images.sh"
# images.sh names the socket after STATE: the same path as KIND_DOCKER_RUN's.
DOCKER_SOCK="$KIND_DOCKER_RUN/docker.sock"

# ---------------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------------

# offline_detect: succeed when kind's upstream node image cannot be had: no Docker
# engine to ask, or its registry unreachable. One HEAD request, 5 s at most.
offline_detect() {
  docker info >/dev/null 2>&1 || return 0
  ! curl -fsS -o /dev/null --max-time 5 https://registry-1.docker.io/v2/ 2>/dev/null \
    && ! curl -sS -o /dev/null --max-time 5 https://registry-1.docker.io/v2/ 2>/dev/null
}

# ---------------------------------------------------------------------------------
# Go programs
# ---------------------------------------------------------------------------------

find_go_offline() {
  GO="$(command -v go || true)"
  if [ -z "$GO" ] && [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go; fi
  [ -n "$GO" ] || die "Go not found (looked for 'go' on PATH and /usr/local/go/bin/go); install Go >= 1.26"
}

# go_tool NAME MODULE@VERSION: `go install` MODULE into $KIND_BIN unless the binary
# there was built from that version.
go_tool() {
  local name="$1" mod="$2" log="$KIND_CACHE/$1.install.log"
  [ -x "$KIND_BIN/$name" ] && [ "$(cat "$KIND_BIN/$name.version" 2>/dev/null)" = "$mod" ] && return 0
  # e2e/local may have built the same version (containerd, crictl, metrics-server).
  if [ -x "$E2E_DIR/.bin/$name" ] && [ "$(cat "$E2E_DIR/.bin/$name.version" 2>/dev/null)" = "$mod" ] \
      && [ ! -e "$E2E_DIR/.bin/$name.ldflags" ]; then
    cp "$E2E_DIR/.bin/$name" "$KIND_BIN/$name.tmp" && mv -f "$KIND_BIN/$name.tmp" "$KIND_BIN/$name"
    echo "$mod" > "$KIND_BIN/$name.version"
    return 0
  fi
  say "building $name ($mod; a few minutes the first time, log $log)"
  : > "$log"
  progress_run "building $name (go install)" "~1-5 min" "cached" "$log" \
    env CGO_ENABLED=0 GOBIN="$KIND_BIN" nice -n 19 "$GO" install -buildvcs=false -ldflags="-s -w" "$mod" \
    || { tail -n 20 "$log" >&2; die "go install $mod failed (log: $log)"; }
  echo "$mod" > "$KIND_BIN/$name.version"
}

# k8s_node_ldflags: the Kubernetes version stamped in as the release build does (the
# same flags as e2e/local's cp_ldflags): kubeadm and /version read it.
k8s_node_ldflags() {
  local v minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  for v in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    printf -- '-X %s.gitVersion=%s -X %s.gitMajor=1 -X %s.gitMinor=%s -X %s.gitTreeState=clean ' \
      "$v" "$K8S_VERSION" "$v" "$v" "$minor" "$v"
  done
  printf -- '-s -w'
}

# k8s_node_build: e2e/kind/node (kubeadm, kubelet, kubectl, the control plane, kube-proxy
# and etcd in one binary), rebuilt when its sources, Go or the flags change.
k8s_node_build() {
  local src="$here/node" out="$KIND_BIN/k8s-node" log="$KIND_CACHE/k8s-node.build.log" stamp
  stamp="$( { cat "$src/go.mod" "$src/go.sum" "$src"/*.go; "$GO" version; k8s_node_ldflags; } | sha256sum | cut -d' ' -f1)"
  [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && return 0
  say "building the node's Kubernetes programs ($K8S_VERSION, e2e/kind/node; log $log)"
  : > "$log"
  progress_run "compiling e2e/kind/node" "~3-20 min (warm e2e/local cache: ~3 min)" "cached" "$log" \
    bash -c 'cd "$1" && CGO_ENABLED=0 nice -n 19 "$2" build -buildvcs=false -ldflags "$3" -o "$4.tmp" .' \
    _ "$src" "$GO" "$(k8s_node_ldflags)" "$out" \
    || { tail -n 20 "$log" >&2; die "building e2e/kind/node failed (log: $log)"; }
  mv -f "$out.tmp" "$out"
  echo "$stamp" > "$out.stamp"
}

# prometheus_build: Prometheus from e2e/kind/prometheus (see tools.go there for why
# not `go install` or Debian's package), rebuilt when the module or Go changes.
prometheus_build() {
  local src="$here/prometheus" out="$KIND_BIN/prometheus" log="$KIND_CACHE/prometheus.build.log" stamp
  stamp="$( { cat "$src/go.mod" "$src/go.sum"; "$GO" version; } | sha256sum | cut -d' ' -f1)"
  [ -x "$out" ] && [ "$(cat "$out.stamp" 2>/dev/null)" = "$stamp" ] && return 0
  say "building Prometheus (e2e/kind/prometheus; log $log)"
  : > "$log"
  progress_run "compiling Prometheus" "~10-40 min" "cached" "$log" \
    bash -c 'cd "$1" && CGO_ENABLED=0 nice -n 19 "$2" build -buildvcs=false -ldflags "-s -w" -o "$3.tmp" github.com/prometheus/prometheus/cmd/prometheus' \
    _ "$src" "$GO" "$out" \
    || { tail -n 20 "$log" >&2; die "building Prometheus failed (log: $log)"; }
  mv -f "$out.tmp" "$out"
  echo "$stamp" > "$out.stamp"
}

# image_prometheus: the binary alone, run as nobody (prometheus.yaml mounts its config
# and data); a `docker save` tarball written directly, as for metrics-server.
image_prometheus() {
  local tag out root
  # Not at /prometheus: prometheus.yaml mounts its data there.
  tag="$( { sha256sum "$KIND_BIN/prometheus"; echo /bin/prometheus; } | sha256sum | cut -c1-12)"
  OFFLINE_PROMETHEUS_IMAGE="$IMAGE_PREFIX/prometheus:$tag"
  out="$CACHE/images/prometheus-$tag.tar"
  if [ ! -f "$out" ]; then
    root="$(mktemp -d "$CACHE/tmp.prometheus.XXXXXX")"
    mkdir "$root/bin"
    cp "$KIND_BIN/prometheus" "$root/bin/prometheus"
    mkdir -m 1777 "$root/tmp"
    image_from_rootfs "$OFFLINE_PROMETHEUS_IMAGE" "$root" "$out" '["/bin/prometheus"]'
    rm -rf "$root"
    say "made $OFFLINE_PROMETHEUS_IMAGE ($(du -h "$out" | cut -f1))"
  fi
  IMAGE_TARS+=("$out")
}

offline_tools() {
  find_go_offline
  mkdir -p "$KIND_BIN"
  go_tool kind "sigs.k8s.io/kind@$KIND_VERSION"
  k8s_node_build
  go_tool containerd github.com/containerd/containerd/v2/cmd/containerd@v2.4.2
  go_tool ctr github.com/containerd/containerd/v2/cmd/ctr@v2.4.2
  go_tool containerd-shim-runc-v2 github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@v2.4.2
  go_tool crictl sigs.k8s.io/cri-tools/cmd/crictl@v1.37.0
  go_tool coredns github.com/coredns/coredns@v1.14.6
  go_tool metrics-server sigs.k8s.io/metrics-server/cmd/metrics-server@v0.8.0
  prometheus_build
}

# kind_module_dir: the kind module's source in the Go module cache (its node files).
kind_module_dir() {
  (cd "$here/node" && "$GO" mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | jq -r .Dir)
}

# ---------------------------------------------------------------------------------
# The Docker engine
# ---------------------------------------------------------------------------------

kind_docker_pid() {
  local pid
  pid="$(cat "$KIND_DOCKER_RUN/dockerd.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null \
    && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF "$KIND_DOCKER_RUN" \
    && echo "$pid"
}

kind_docker_mode() { cat "$KIND_DOCKER_RUN/mode" 2>/dev/null || true; }

# kind_docker_start build|cluster: this script's Docker engine in that mode (restarted
# if it runs in the other one).
kind_docker_start() {
  local mode="$1" net=()
  if [ -n "$(kind_docker_pid)" ]; then
    [ "$(kind_docker_mode)" = "$mode" ] && return 0
    # An engine in cluster mode builds too; never stop it under a running cluster.
    [ "$mode" = build ] && return 0
    kind_docker_stop
  fi
  docker_install
  apt_install jq
  mkdir -p "$KIND_DOCKER_RUN" "$KIND_DOCKER_ROOT"
  if [ "$mode" = build ]; then
    net=(--iptables=false --ip-masq=false --ip-forward=false --bridge=none)
  else
    net=(--bridge=none --ip6tables=false)
  fi
  say "starting a Docker engine for kind ($mode mode, socket $DOCKER_SOCK)"
  echo "$mode" > "$KIND_DOCKER_RUN/mode"
  # Debian's containerd 1.6 is the engine's; keep other containerds off its PATH.
  env PATH=/usr/sbin:/usr/bin:/sbin:/bin nohup dockerd \
    --data-root "$KIND_DOCKER_ROOT" --exec-root "$KIND_DOCKER_RUN/exec" \
    --pidfile "$KIND_DOCKER_RUN/dockerd.pid" -H "unix://$DOCKER_SOCK" \
    --add-runtime "no-sys-resource=$here/runc-no-sys-resource" --default-runtime no-sys-resource \
    "${net[@]}" --storage-driver=overlay2 --log-level=warn \
    >"$KIND_DOCKER_RUN/dockerd.log" 2>&1 </dev/null &
  local i
  for i in $(seq 1 150); do
    docker_ version >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  tail -n 20 "$KIND_DOCKER_RUN/dockerd.log" >&2
  die "the Docker engine did not start in 30 s (log: $KIND_DOCKER_RUN/dockerd.log)"
}

# kind_docker_stop: stop the engine by its PID; unmount what it left.
kind_docker_stop() {
  local pid i
  pid="$(kind_docker_pid)" || true
  if [ -n "$pid" ]; then
    kill -TERM "$pid"
    for i in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      say "dockerd (pid $pid) ignored SIGTERM for 30 s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
    say "stopped the Docker engine (pid $pid)"
  fi
  local m
  awk -v a="$KIND_DOCKER_RUN" -v b="$KIND_DOCKER_ROOT" 'index($2, a) == 1 || index($2, b) == 1 {print $2}' /proc/mounts \
    | sort -r | while read -r m; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true; done
  rm -f "$KIND_DOCKER_RUN/mode"
}

# images.sh builds with its docker_start/docker_stop; here they are this engine's.
docker_start() { kind_docker_start build; }
docker_stop() { :; }

# ---------------------------------------------------------------------------------
# Images
# ---------------------------------------------------------------------------------

# image_labelled REF LABEL VALUE: REF exists in the engine with LABEL=VALUE.
image_labelled() {
  [ "$(docker_ image inspect -f "{{index .Config.Labels \"$2\"}}" "$1" 2>/dev/null)" = "$3" ]
}

# build_context NAME: an empty directory for one image's build, removed by the caller.
build_context() { mktemp -d "$KIND_CACHE/tmp.$1.XXXXXX"; }

# docker_build_logged NAME CONTEXT ARGS...: docker build with its output in a log.
docker_build_logged() {
  local name="$1" ctx="$2" log="$KIND_CACHE/build-$1.log"
  shift 2
  : > "$log"
  progress_run "building the image $name (docker build)" "~1-3 min" "cached" "$log" \
    env DOCKER_BUILDKIT=0 "$DOCKER" -H "unix://$DOCKER_SOCK" build --network host "$@" "$ctx" \
    || { tail -n 30 "$log" >&2; die "docker build of $name failed (log: $log)"; }
}

# The refs kubeadm v1.37.2 lists (`kubeadm config images list`), and the sandbox
# image of kind's containerd config (KIND.md, finding 4).
K8S_COMPONENT_REFS="registry.k8s.io/kube-apiserver:$K8S_VERSION registry.k8s.io/kube-controller-manager:$K8S_VERSION registry.k8s.io/kube-scheduler:$K8S_VERSION registry.k8s.io/kube-proxy:$K8S_VERSION registry.k8s.io/etcd:3.7.0-0"
COREDNS_REF=registry.k8s.io/coredns/coredns:v1.14.6
PAUSE_REF=registry.k8s.io/pause:3.10

# components_image: one image for the five component refs (they share every layer).
components_image() {
  local hash ref ctx
  hash="$( { sha256sum "$KIND_BIN/k8s-node" | cut -d' ' -f1; cat "$here/images/components/Dockerfile"; echo "$BASE_RECIPE"; } | sha256sum | cut -c1-12)"
  image_labelled "${K8S_COMPONENT_REFS%% *}" meshscaler.e2e.hash "$hash" && return 0
  ctx="$(build_context components)"
  cp "$here/images/components/Dockerfile" "$ctx/"
  ln "$KIND_BIN/k8s-node" "$ctx/k8s-node" 2>/dev/null || cp "$KIND_BIN/k8s-node" "$ctx/k8s-node"
  local tags=()
  for ref in $K8S_COMPONENT_REFS; do tags+=(-t "$ref"); done
  say "building the Kubernetes component images ($K8S_VERSION)"
  docker_build_logged components "$ctx" --label "meshscaler.e2e.hash=$hash" "${tags[@]}"
  rm -rf "$ctx"
}

# single_binary_image REF BINARY ENTRYPOINT-JSON: an image of one static binary at /.
single_binary_image() {
  local ref="$1" binary="$2" entrypoint="$3" hash ctx
  hash="$( { sha256sum "$binary" | cut -d' ' -f1; echo "$entrypoint"; } | sha256sum | cut -c1-12)"
  image_labelled "$ref" meshscaler.e2e.hash "$hash" && return 0
  ctx="$(build_context image)"
  mkdir -m 1777 "$ctx/tmp"
  cp "$binary" "$ctx/"
  tar -C "$ctx" --numeric-owner --owner=0 --group=0 -c . \
    | docker_ import --change "ENTRYPOINT $entrypoint" --change "LABEL meshscaler.e2e.hash=$hash" - "$ref" >/dev/null \
    || die "docker import of $ref failed"
  rm -rf "$ctx"
}

pause_binary() {
  local src="$E2E_DIR/images/pause/pause.c" out="$KIND_BIN/pause"
  [ -x "$out" ] && [ "$out" -nt "$src" ] && return 0
  apt_install gcc libc6-dev
  gcc -static -O2 -Wall -Wextra -Werror -s -o "$out" "$src" || die "could not build the pause program ($src)"
}

# node_image: the node image, rebuilt when any input changes (its hash is the label).
node_image() {
  local kind_dir hash ctx base="localhost/meshscaler-e2e/kind-node-base:build"
  kind_dir="$(kind_module_dir)"
  [ -d "$kind_dir/images/base/files" ] || die "kind's node files are not in the module cache ($kind_dir/images/base/files)"
  hash="$( { tree_hash "$kind_dir/images/base/files" "$here/images/node";
             for b in k8s-node containerd ctr containerd-shim-runc-v2 crictl coredns pause; do sha256sum "$KIND_BIN/$b" | cut -d' ' -f1; done;
             docker_ image inspect -f '{{.Id}}' "${K8S_COMPONENT_REFS%% *}" "$COREDNS_REF" "$PAUSE_REF";
             echo "$BASE_RECIPE $KIND_NODE_RECIPE $K8S_VERSION"; } | sha256sum | cut -c1-12)"
  if image_labelled "$KIND_NODE_IMAGE" meshscaler.e2e.hash "$hash"; then
    say "node image $KIND_NODE_IMAGE is up to date ($hash)"
    return 0
  fi
  local t0=$SECONDS
  ctx="$(build_context node)"
  cp -r "$kind_dir/images/base/files" "$ctx/files"
  # The module cache is read-only; give the files the modes kind's Dockerfile gives.
  find "$ctx/files" -type d -exec chmod 0755 {} +
  find "$ctx/files" -type f -exec chmod 0644 {} +
  chmod 0755 "$ctx"/files/usr/local/bin/* "$ctx"/files/kind/bin/*
  mkdir "$ctx/bin"
  for b in k8s-node containerd ctr containerd-shim-runc-v2 crictl; do
    ln "$KIND_BIN/$b" "$ctx/bin/$b" 2>/dev/null || cp "$KIND_BIN/$b" "$ctx/bin/$b"
  done
  cp "$here/images/node/Dockerfile" "$ctx/"
  say "building the node base image (e2e/kind/images/node/Dockerfile)"
  docker_build_logged kind-node-base "$ctx" --build-arg "K8S_VERSION=$K8S_VERSION" -t "$base"
  rm -rf "$ctx"

  # Preload, as kind's build does (nodeimage/buildcontext.go, imageimporter.go): a
  # container of the image runs containerd, the images go in unpacked-later and
  # pinned, and the container becomes the image. kind's `--volume /var` on every node
  # copies /var/lib/containerd from it.
  local box="ms-kind-preload-$$" log="$KIND_CACHE/preload.log"
  : > "$log"
  say "preloading the component images into the node image's containerd"
  docker_ rm -f "$box" >/dev/null 2>&1 || true
  docker_ run -d --name "$box" --entrypoint sleep --security-opt seccomp=unconfined "$base" infinity >>"$log" 2>&1 \
    || { tail -n 5 "$log" >&2; die "could not start the preload container (log: $log)"; }
  docker_ exec "$box" bash -c 'nohup containerd >/tmp/containerd.log 2>&1 &
    for i in $(seq 1 50); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && exit 0; sleep 0.2; done
    cat /tmp/containerd.log; exit 1' >>"$log" 2>&1 \
    || { docker_ rm -f "$box" >/dev/null; tail -n 20 "$log" >&2; die "containerd did not start in the preload container (log: $log)"; }
  # shellcheck disable=SC2086  # a list of refs
  if ! docker_ save $K8S_COMPONENT_REFS "$COREDNS_REF" "$PAUSE_REF" \
      | docker_ exec -i "$box" ctr -n k8s.io images import --label=io.cri-containerd.pinned=pinned \
          --all-platforms --no-unpack --digests - >>"$log" 2>&1; then
    docker_ rm -f "$box" >/dev/null; tail -n 20 "$log" >&2; die "importing the images into the node image failed (log: $log)"
  fi
  docker_ exec "$box" ctr -n k8s.io images ls -q >>"$log" 2>&1
  # The container's PID 1 (sleep) reaps nothing, so containerd stays a zombie:
  # wait for it to stop answering rather than for it to vanish.
  docker_ exec "$box" bash -c 'pkill -x containerd; for i in $(seq 1 150); do ctr version >/dev/null 2>&1 || exit 0; sleep 0.2; done; exit 1' \
    || say "containerd in the preload container did not stop in 30 s; committing anyway"
  docker_ commit \
    --change 'ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]' \
    --change "LABEL meshscaler.e2e.hash=$hash" \
    "$box" "$KIND_NODE_IMAGE" >>"$log" 2>&1 \
    || { docker_ rm -f "$box" >/dev/null; tail -n 5 "$log" >&2; die "docker commit of the node image failed (log: $log)"; }
  docker_ rm -f "$box" >/dev/null
  docker_ rmi "$base" >/dev/null 2>&1 || true
  say "  built $KIND_NODE_IMAGE in $((SECONDS - t0)) s ($hash)"
}

# offline_node_image: everything the offline cluster needs, in the engine (build mode).
offline_node_image() {
  mkdir -p "$KIND_CACHE" "$CACHE/images"
  rm -rf "$KIND_CACHE"/tmp.*
  offline_tools
  pause_binary
  kind_docker_start build
  docker_base_image
  components_image
  single_binary_image "$COREDNS_REF" "$KIND_BIN/coredns" '["/coredns"]'
  single_binary_image "$PAUSE_REF" "$KIND_BIN/pause" '["/pause"]'
  node_image
}

# offline_workload_images: the images the suite runs, as e2e/local makes them (tarballs
# in e2e/.cache/images, shared with it), plus Prometheus built from its module. Sets
# OFFLINE_*_IMAGE and OFFLINE_IMAGE_TARS (for `kind load image-archive`).
offline_workload_images() {
  IMAGE_TARS=()
  image_metrics_server
  image_prometheus
  image_dockerfile app "$IMAGES_DIR/app"; OFFLINE_APP_IMAGE="$IMAGE_REF"
  image_dockerfile sidecar "$IMAGES_DIR/sidecar"; OFFLINE_SIDECAR_IMAGE="$IMAGE_REF"
  local tars=("${IMAGE_TARS[@]}")
  image_meshscaler
  tars+=("${IMAGE_TARS[@]}")
  OFFLINE_MESHSCALER_IMAGE="$MESHSCALER_IMAGE"
  OFFLINE_METRICS_SERVER_IMAGE="$METRICS_SERVER_IMAGE"
  OFFLINE_IMAGE_TARS="${tars[*]}"
}

# ---------------------------------------------------------------------------------
# The cluster's pod network and readiness
# ---------------------------------------------------------------------------------

# offline_cni CLUSTER KUBECONFIG: kindnetd's job for a cluster of fixed nodes. Each
# node gets a ptp + host-local conflist for its podCIDR (the shape of kindnetd's) and a
# route to every other node's podCIDR through that node's address on kind's network.
offline_cni() {
  local cluster="$1" kc="$2" nodes line name cidr ip other ocidr oip i
  for i in $(seq 1 60); do
    nodes="$(kubectl --kubeconfig "$kc" get nodes -o 'jsonpath={range .items[*]}{.metadata.name} {.spec.podCIDR} {.status.addresses[?(@.type=="InternalIP")].address}{"\n"}{end}' 2>/dev/null || true)"
    [ -n "$nodes" ] && ! awk 'NF < 3 {bad = 1} END {exit !bad}' <<<"$nodes" && break
    sleep 2
  done
  if [ -z "$nodes" ] || awk 'NF < 3 {bad = 1} END {exit !bad}' <<<"$nodes"; then
    die "the nodes of $cluster have no podCIDR or address after 120 s: $nodes"
  fi
  while read -r name cidr ip; do
    say "pod network on $name: $cidr ($ip)"
    docker exec -i "$name" sh -c 'mkdir -p /etc/cni/net.d && cat > /etc/cni/net.d/10-meshscaler-e2e.conflist' <<EOF
{
  "cniVersion": "0.3.1",
  "name": "kindnet",
  "plugins": [
    {
      "type": "ptp",
      "ipMasq": false,
      "mtu": 1500,
      "ipam": {
        "type": "host-local",
        "dataDir": "/run/cni-ipam-state",
        "routes": [{"dst": "0.0.0.0/0"}],
        "ranges": [[{"subnet": "$cidr"}]]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
    while read -r other ocidr oip; do
      [ "$other" = "$name" ] && continue
      docker exec "$name" ip route replace "$ocidr" via "$oip" \
        || die "could not route $ocidr via $oip on $name"
    done <<<"$nodes"
  done <<<"$nodes"
}

# kube_system_running KUBECONFIG: there are kube-system pods and all are Running.
kube_system_running() {
  local pods
  pods="$(kubectl --kubeconfig "$1" -n kube-system get pods --no-headers 2>/dev/null)" && [ -n "$pods" ] \
    && awk '$3 != "Running" {bad = 1} END {exit bad}' <<<"$pods"
}

# offline_cluster_ready KUBECONFIG: every node Ready, every kube-system pod Running.
offline_cluster_ready() {
  local kc="$1"
  kubectl --kubeconfig "$kc" wait --for=condition=Ready nodes --all --timeout=180s >/dev/null \
    || { kubectl --kubeconfig "$kc" get nodes -o wide >&2; die "the nodes are not Ready after 180 s"; }
  local i
  for i in $(seq 1 90); do kube_system_running "$kc" && break; sleep 2; done
  kube_system_running "$kc" \
    || { kubectl --kubeconfig "$kc" -n kube-system get pods -o wide >&2; die "kube-system pods are not all Running after 180 s"; }
  kubectl --kubeconfig "$kc" get nodes -o wide >&2
}

# ---------------------------------------------------------------------------------
# The host: lock, saved firewall and sysctls
# ---------------------------------------------------------------------------------

HOST_SYSCTLS="net.ipv4.ip_forward net.bridge.bridge-nf-call-iptables net.bridge.bridge-nf-call-ip6tables"

# rules_of: the host's iptables rules, without counters and comments, for comparison.
rules_of() {
  { iptables-save; ip6tables-save; } 2>/dev/null | sed -e '/^#/d' -e 's/\[[0-9]*:[0-9]*\]$//'
}

# host_lock_take: hold the machine's node lock until down.sh: a background process
# inherits the locked descriptor and sleeps; down.sh kills it by its PID.
host_lock_take() {
  [ -n "$(lock_holder_pid)" ] && return 0
  mkdir -p "$state"
  say "waiting for the node lock ($NODE_LOCK_FILE; held while a cluster runs)"
  local fd
  exec {fd}>>"$NODE_LOCK_FILE"
  flock "$fd"
  nohup sleep infinity >/dev/null 2>&1 </dev/null &
  echo $! > "$state/lock.pid"
  exec {fd}>&-
  say "holding the node lock (pid $(cat "$state/lock.pid"))"
}

lock_holder_pid() {
  local pid
  pid="$(cat "$state/lock.pid" 2>/dev/null || true)"
  [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sleep ] && echo "$pid"
}

host_lock_release() {
  local pid
  pid="$(lock_holder_pid)" || true
  [ -z "$pid" ] || kill "$pid"
  rm -f "$state/lock.pid"
}

# host_save: the firewall and sysctls before the engine in cluster mode first starts.
host_save() {
  [ -f "$state/host/iptables.rules" ] && return 0
  mkdir -p "$state/host"
  { iptables-save; } > "$state/host/iptables.save"
  { ip6tables-save; } > "$state/host/ip6tables.save" 2>/dev/null || true
  rules_of > "$state/host/iptables.rules"
  local s
  for s in $HOST_SYSCTLS; do
    sysctl -n "$s" 2>/dev/null | sed "s#^#$s=#" >> "$state/host/sysctl.save" || true
  done
  { awk '{print $1}' /proc/modules 2>/dev/null || true; } | sort > "$state/host/modules.save"
  # kind bind-mounts /lib/modules; Docker creates it when it is missing.
  [ -e /lib/modules ] || touch "$state/host/lib-modules-created"
}

# host_restore: put the firewall and sysctls back; print what still differs.
host_restore() {
  [ -f "$state/host/iptables.rules" ] || return 0
  local ipt table
  for ipt in iptables ip6tables; do
    [ -f "$state/host/$ipt.save" ] || continue
    "$ipt-restore" < "$state/host/$ipt.save" || say "$ipt-restore failed"
    # restore replaces the tables it names; a table first made since then is emptied.
    for table in $("$ipt-save" 2>/dev/null | sed -n 's/^\*//p'); do
      grep -qx "\*$table" "$state/host/$ipt.save" && continue
      if ! { "$ipt" -t "$table" -F && "$ipt" -t "$table" -X; }; then say "could not empty the $ipt table $table"; fi
    done
  done
  local line
  while IFS= read -r line; do
    sysctl -q -w "$line" >/dev/null 2>&1 || say "could not restore sysctl $line"
  done < "$state/host/sysctl.save"
  if ! rules_of | diff "$state/host/iptables.rules" - > "$state/host/iptables.diff"; then
    say "the host's iptables rules differ from before up.sh:"
    cat "$state/host/iptables.diff" >&2
    return 1
  fi
  local loaded
  loaded="$({ awk '{print $1}' /proc/modules 2>/dev/null || true; } | sort | comm -13 "$state/host/modules.save" - | tr '\n' ' ')"
  # Kernel modules are machine-wide and may be in use by others: named, not unloaded.
  [ -z "$loaded" ] || say "kernel modules loaded since up.sh (left loaded): $loaded"
  say "iptables rules and sysctls restored as before up.sh"
  rm -rf "$state/host"
}
