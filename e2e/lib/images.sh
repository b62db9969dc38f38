# shellcheck shell=bash
# e2e/lib/images.sh — container images without a registry, sourced by e2e/local.
#
# No registry is reachable from these machines, so every image the local cluster runs
# is made here and imported into the node's containerd (`ctr images import`); pods use
# them with imagePullPolicy IfNotPresent (or Never) and nothing is ever pulled.
#
# Two ways to make an image:
#   - from a Dockerfile in the repository, with a Docker engine from Debian's
#     `docker.io` package that these scripts start and stop (it runs only while
#     building), on a `debian:bookworm-slim` made by debootstrap from the Debian mirror
#     and imported, so ordinary `FROM debian:bookworm-slim` Dockerfiles build offline;
#   - for a single static binary (the pause program, metrics-server), a `docker save`
#     tarball written directly: one layer, a config and a manifest.
#
# Every image is tagged with a hash of what it is built from, so a changed source
# gives a new tag (and pods that name it get the new image), and an unchanged one is
# found in $CACHE/images and not rebuilt. The cache (base rootfs tarball, Docker's
# layer store, saved images) lives in e2e/.cache and survives `down`.

CACHE="${MESHSCALER_E2E_CACHE:-$E2E_DIR/.cache}"
IMAGES_DIR="$E2E_DIR/images"
DOCKER="/usr/bin/docker"      # Debian's client, matching its engine
DOCKER_SOCK="$STATE/docker/docker.sock"
BASE_IMAGE="debian:bookworm-slim"
# The base image's recipe (docker_base_image): bump it when the recipe changes, so
# cached tarballs and imported images of an older recipe are made again.
BASE_RECIPE="r2"
IMAGE_PREFIX="localhost/meshscaler-e2e"

docker_() { "$DOCKER" -H "unix://$DOCKER_SOCK" "$@"; }

# tree_hash FILE-OR-DIR...: a short hash of the paths' names and contents.
tree_hash() {
  find "$@" -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sed "s#  $REPO/#  #" \
    | sha256sum | cut -c1-12
}

# ---------------------------------------------------------------------------------
# Images from a static binary, without Docker
# ---------------------------------------------------------------------------------

# image_from_rootfs REF ROOTFS OUT ENTRYPOINT-JSON: write a `docker save`-format
# tarball of one layer holding ROOTFS, run as nobody unless the pod says otherwise.
image_from_rootfs() {
  local ref="$1" rootfs="$2" out="$3" entrypoint="$4" tmp diff cfg
  tmp="$(mktemp -d "$CACHE/tmp.image.XXXXXX")"
  tar -C "$rootfs" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$tmp/layer.tar" .
  diff="$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)"
  mkdir "$tmp/$diff"
  mv "$tmp/layer.tar" "$tmp/$diff/layer.tar"
  printf '{"architecture":"amd64","os":"linux","config":{"Entrypoint":%s,"User":"65534:65534","Env":["PATH=/"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entrypoint" "$diff" > "$tmp/config.json"
  cfg="$(sha256sum "$tmp/config.json" | cut -d' ' -f1)"
  mv "$tmp/config.json" "$tmp/$cfg.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cfg" "$ref" "$diff" > "$tmp/manifest.json"
  tar -C "$tmp" -cf "$out.tmp" manifest.json "$cfg.json" "$diff"
  mv -f "$out.tmp" "$out"
  rm -rf "$tmp"
}

# The pause image: the sandbox process of every pod (pinned in containerd's config).
image_pause() {
  local src="$IMAGES_DIR/pause/pause.c" tag out
  tag="$(tree_hash "$src")"
  PAUSE_IMAGE="$IMAGE_PREFIX/pause:$tag"
  out="$CACHE/images/pause-$tag.tar"
  if [ ! -f "$out" ]; then
    local root; root="$(mktemp -d "$CACHE/tmp.pause.XXXXXX")"
    gcc -static -O2 -Wall -Wextra -Werror -s -o "$root/pause" "$src" || die "could not build the pause program ($src)"
    image_from_rootfs "$PAUSE_IMAGE" "$root" "$out" '["/pause"]'
    rm -rf "$root"
    say "made $PAUSE_IMAGE ($(du -h "$out" | cut -f1))"
  fi
  IMAGE_TARS+=("$out")
}

# metrics-server, from the binary `go install`ed by node_install.
image_metrics_server() {
  local tag out
  tag="$(tree_hash "$BIN/metrics-server.version" "$BIN/metrics-server")"
  METRICS_SERVER_IMAGE="$IMAGE_PREFIX/metrics-server:$tag"
  out="$CACHE/images/metrics-server-$tag.tar"
  if [ ! -f "$out" ]; then
    local root; root="$(mktemp -d "$CACHE/tmp.ms.XXXXXX")"
    cp "$BIN/metrics-server" "$root/metrics-server"
    mkdir -m 1777 "$root/tmp"
    image_from_rootfs "$METRICS_SERVER_IMAGE" "$root" "$out" '["/metrics-server"]'
    rm -rf "$root"
    say "made $METRICS_SERVER_IMAGE ($(du -h "$out" | cut -f1))"
  fi
  IMAGE_TARS+=("$out")
}

# ---------------------------------------------------------------------------------
# Images from Dockerfiles, with a Docker engine started for the build
# ---------------------------------------------------------------------------------

# Debian's docker.io would start its engine from its init script on install (no
# systemd here, but sysvinit scripts run): a policy-rc.d that says "no" stops that,
# so the only engine is the one these scripts start and stop.
docker_install() {
  dpkg-query -W -f='${Status}' docker.io 2>/dev/null | grep -q "install ok installed" && return 0
  local policy=/usr/sbin/policy-rc.d had_policy=0
  [ -e "$policy" ] && had_policy=1
  [ "$had_policy" -eq 1 ] || printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy" 2>/dev/null || true
  apt_install docker.io
  [ "$had_policy" -eq 1 ] || rm -f "$policy"
}

# docker_start: an engine with its layer store in the cache, no bridge and no
# iptables rules (builds use the host's network), sockets under the state dir.
docker_start() {
  is_running dockerd && return 0
  docker_install
  mkdir -p "$STATE/docker" "$CACHE/docker" "$PIDS" "$LOGS"
  say "starting a Docker engine for image builds"
  # Debian's containerd 1.6 is the engine's, not the node's 2.x: keep e2e/.bin off
  # its PATH.
  start dockerd env PATH=/usr/sbin:/usr/bin:/sbin:/bin dockerd \
    --data-root "$CACHE/docker" --exec-root "$STATE/docker/exec" \
    --pidfile "$STATE/docker/dockerd.pid" -H "unix://$DOCKER_SOCK" \
    --iptables=false --ip-masq=false --ip-forward=false --bridge=none \
    --storage-driver=overlay2 --log-level=warn
  wait_for dockerd 60 docker_ version
}

docker_stop() {
  is_running dockerd || return 0
  stop dockerd
  unmount_under "$STATE/docker"
  unmount_under "$CACHE/docker"
  say "stopped the Docker engine"
}

# The base image: debootstrap's minbase of bookworm from this machine's Debian mirror,
# trimmed like the official slim image, with the host's apt sources (so packages
# installed in images are the versions the host has).
docker_base_image() {
  [ "$(docker_ image inspect -f '{{index .Config.Labels "meshscaler.e2e.base"}}' "$BASE_IMAGE" 2>/dev/null)" = "$BASE_RECIPE" ] \
    && return 0
  local tarball="$CACHE/debian-bookworm-slim.$BASE_RECIPE.tar"
  local old
  for old in "$CACHE"/debian-bookworm-slim.*tar; do
    [ "$old" = "$tarball" ] || rm -f "$old"
  done
  if [ ! -f "$tarball" ]; then
    apt_install debootstrap
    local mirror root t0=$SECONDS
    mirror="$(sed -n 's/^URIs: *\(http[^ ]*debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)"
    [ -n "$mirror" ] || mirror="$(awk '$1 == "deb" && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)"
    [ -n "$mirror" ] || mirror="http://deb.debian.org/debian"
    root="$(mktemp -d "$CACHE/tmp.rootfs.XXXXXX")"
    say "making $BASE_IMAGE with debootstrap from $mirror (about 2 min; log $CACHE/debootstrap.log)"
    : > "$CACHE/debootstrap.log"
    if ! progress_run "making the base image (debootstrap)" "~2 min" "cached" "$CACHE/debootstrap.log" \
        debootstrap --variant=minbase bookworm "$root" "$mirror"; then
      tail -n 20 "$CACHE/debootstrap.log" >&2
      unmount_under "$root"; rm -rf "$root"
      die "debootstrap failed (log: $CACHE/debootstrap.log)"
    fi
    unmount_under "$root"
    rm -rf "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
      "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
      "$root"/var/log/*.log
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/debian.sources"
      rm -f "$root/etc/apt/sources.list"
    fi
    tar -C "$root" --numeric-owner -cf "$tarball.tmp" .
    mv -f "$tarball.tmp" "$tarball"
    rm -rf "$root"
    say "  base rootfs ready in $((SECONDS - t0)) s ($(du -h "$tarball" | cut -f1))"
  fi
  docker_ import --change "LABEL meshscaler.e2e.base=$BASE_RECIPE" "$tarball" "$BASE_IMAGE" >/dev/null
}

# image_dockerfile NAME CONTEXT [BUILD-ARG...]: build CONTEXT/Dockerfile as
# $IMAGE_PREFIX/NAME:HASH unless the saved image is cached; sets IMAGE_REF and
# IMAGE_TAR. The hash covers CONTEXT, or the paths in IMAGE_HASH_PATHS when the
# context holds more than the build reads.
image_dockerfile() {
  local name="$1" ctx="$2" tag out
  shift 2
  # The base image's recipe is part of what the image is made from.
  # shellcheck disable=SC2086  # a list of paths
  tag="$( { tree_hash ${IMAGE_HASH_PATHS:-$ctx}; echo "$BASE_RECIPE"; } | sha256sum | cut -c1-12)"
  IMAGE_REF="$IMAGE_PREFIX/$name:$tag"
  out="$CACHE/images/$name-$tag.tar"
  if [ ! -f "$out" ]; then
    docker_start
    docker_base_image
    local t0=$SECONDS
    say "building $IMAGE_REF from $ctx/Dockerfile"
    local args=() a
    for a in "$@"; do args+=(--build-arg "$a"); done
    : > "$CACHE/build-$name.log"
    if ! progress_run "building the image $name (docker build)" "~30-50 s" "cached" "$CACHE/build-$name.log" \
        env DOCKER_BUILDKIT=0 "$DOCKER" -H "unix://$DOCKER_SOCK" build --network host "${args[@]}" -t "$IMAGE_REF" "$ctx"; then
      tail -n 30 "$CACHE/build-$name.log" >&2
      die "docker build of $name failed (log: $CACHE/build-$name.log)"
    fi
    docker_ save "$IMAGE_REF" -o "$out.tmp" && mv -f "$out.tmp" "$out"
    say "  built $IMAGE_REF in $((SECONDS - t0)) s ($(du -h "$out" | cut -f1) saved)"
  fi
  IMAGE_TAR="$out"
  IMAGE_TARS+=("$out")
}

# image_meshscaler: the product's own image, from the repository's Dockerfile. Its
# tag hashes what .dockerignore lets into the build; VERSION and REVISION become
# its OCI labels (a new commit with the same sources reuses the cached image).
image_meshscaler() {
  local version revision
  version="$(sed -n 's/^project(meshscaler VERSION \([0-9.]*\).*/\1/p' "$REPO/CMakeLists.txt")"
  revision="$(git -C "$REPO" rev-parse HEAD 2>/dev/null || echo unknown)"
  IMAGE_TARS=()
  IMAGE_HASH_PATHS="$REPO/CMakeLists.txt $REPO/include $REPO/src $REPO/cmd $REPO/Dockerfile $REPO/.dockerignore" \
    image_dockerfile meshscaler "$REPO" "VERSION=$version" "REVISION=$revision"
  MESHSCALER_IMAGE="$IMAGE_REF"
}

# images_build: every image the local cluster runs; writes $STATE/images.env.
images_build() {
  mkdir -p "$CACHE/images" "$STATE"
  # Left by a build that was interrupted.
  rm -rf "$CACHE"/tmp.* "$CACHE"/images/*.tmp
  IMAGE_TARS=()
  image_pause
  image_metrics_server
  image_dockerfile app "$IMAGES_DIR/app"; APP_IMAGE="$IMAGE_REF"
  image_dockerfile sidecar "$IMAGES_DIR/sidecar"; SIDECAR_IMAGE="$IMAGE_REF"
  docker_stop
  cat > "$STATE/images.env" <<EOF
PAUSE_IMAGE=$PAUSE_IMAGE
METRICS_SERVER_IMAGE=$METRICS_SERVER_IMAGE
APP_IMAGE=$APP_IMAGE
SIDECAR_IMAGE=$SIDECAR_IMAGE
IMAGE_TAR_LIST="${IMAGE_TARS[*]}"
EOF
  # Keep the newest two builds of each image in the cache, and always this build's:
  # an old tar reused now (its inputs changed back) is the oldest by mtime, and
  # pruning it broke the import that follows ("ctr: open ...tar: no such file",
  # 2026-12-08).
  local n old
  for n in pause metrics-server app sidecar; do
    ls -t "$CACHE/images/$n"-*.tar 2>/dev/null | tail -n +3 | while read -r old; do
      case " ${IMAGE_TARS[*]} " in *" $old "*) ;; *) rm -f "$old" ;; esac
    done
  done
}

# images_import: load every image of images.env into the node's containerd.
images_import() {
  # shellcheck disable=SC1091
  . "$STATE/images.env"
  local t0=$SECONDS tar
  for tar in $IMAGE_TAR_LIST; do
    ctr_ images import --platform linux/amd64 "$tar" >> "$LOGS/images-import.log" 2>&1 \
      || { tail -n 5 "$LOGS/images-import.log" >&2; die "ctr could not import $tar"; }
  done
  say "imported $(echo "$IMAGE_TAR_LIST" | wc -w) images into the node in $((SECONDS - t0)) s"
}

# image_load TAR: import one more image (a test's own) into the running node.
image_load() {
  [ $# -eq 1 ] && [ -f "$1" ] || die "usage: e2e/local image load FILE.tar (a docker save tarball)"
  is_running containerd || die "the node is not running"
  ctr_ images import --platform linux/amd64 "$1" >> "$LOGS/images-import.log" 2>&1 \
    || { tail -n 5 "$LOGS/images-import.log" >&2; die "ctr could not import $1"; }
}
