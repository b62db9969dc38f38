#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# up.sh - a kind cluster running meshscaler from this repository, for the same
# end-to-end suite as the local environment (tests/incluster/run.sh). Needs Docker,
# kind, helm and kubectl; see e2e/kind/README.md.
#
#   e2e/kind/up.sh [--offline|--online]   create (or reuse) the cluster and install everything
#   e2e/kind/up.sh --offline --build-only build (or find cached) kind, the node image and
#                                        the images, then stop: no cluster, no lock taken
#   source e2e/kind/.state/env           then: tests/incluster/run.sh
#
# Online (a Docker engine that reaches Docker Hub): kind's upstream node image and the
# upstream Prometheus and metrics-server images. Offline (--offline, or detected: no
# engine, or no registry): e2e/kind/offline.sh builds kind, the node image and every
# image from Go modules and the Debian mirror, runs its own Docker engine, and holds
# the machine's node lock until down.sh (see e2e/kind/README.md).
#
# Steps: kind create cluster (cluster.yaml); docker build the meshscaler image
# (meshscaler:dev, the repository's Dockerfile) and the test workload's images
# (localhost/meshscaler-e2e/app:dev and .../sidecar:dev, e2e/images/); kind load them;
# Prometheus (prometheus.yaml); metrics-server (e2e/addons/metrics-server.yaml with the
# upstream image and --kubelet-insecure-tls); the CRD and `helm install meshscaler
# charts/meshscaler`; `helm test`; the environment for the suite in .state/env.
#
# Environment:
#   KIND_CLUSTER_NAME       cluster name (meshscaler-e2e)
#   KIND_NODE_IMAGE         node image for kind create cluster --image (kind's default)
#   PROMETHEUS_IMAGE        Prometheus image (prometheus.yaml's)
#   METRICS_SERVER_IMAGE    registry.k8s.io/metrics-server/metrics-server:v0.8.0
#   MESHSCALER_KIND_STATE   where the kubeconfig and env go (e2e/kind/.state)
#   SKIP_BUILD=1            reuse the images already in Docker
# Re-running it on an existing cluster rebuilds, reloads and upgrades in place.
set -euo pipefail

mode=""
build_only=0
for arg in "$@"; do
  case "$arg" in
    --offline) mode=offline ;;
    --build-only) build_only=1 ;;
    --online) mode=online ;;
    *) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cluster="${KIND_CLUSTER_NAME:-meshscaler-e2e}"
state="${MESHSCALER_KIND_STATE:-$here/.state}"
kubeconfig="$state/kubeconfig"
ms_image="meshscaler:dev"
app_image="localhost/meshscaler-e2e/app:dev"
sidecar_image="localhost/meshscaler-e2e/sidecar:dev"
metrics_server_image="${METRICS_SERVER_IMAGE:-registry.k8s.io/metrics-server/metrics-server:v0.8.0}"
prometheus_host_url="http://127.0.0.1:30090"

say() { echo "[kind] $*" >&2; }
die() { progress_stop 2>/dev/null || true; echo "[kind] error: $*" >&2; exit 1; }

# shellcheck source=offline.sh
. "$here/offline.sh"
if ((build_only)) && [[ $mode != offline ]]; then
  die "--build-only builds the offline path's images: give --offline too"
fi
if [[ -z $mode ]]; then
  if [[ -f $state/offline ]] || offline_detect; then mode=offline; else mode=online; fi
  say "mode: $mode (detected; --online or --offline to choose)"
fi

if [[ $mode == offline ]]; then
  # Everything is built here and runs on this script's own Docker engine; the mark
  # tells down.sh (and a re-run) so, even if this run stops half-way.
  mkdir -p "$state"
  touch "$state/offline"
  offline_node_image
  offline_workload_images
  ln -sf k8s-node "$KIND_BIN/kubectl"
  if ((build_only)); then
    kind_docker_stop
    say "built (--build-only): the node image and the images are cached in $KIND_CACHE"
    exit 0
  fi
  [[ -x $E2E_DIR/.bin/helm ]] || "$E2E_DIR/local" tools helm
  export PATH="$KIND_BIN:$E2E_DIR/.bin:$PATH"
  export DOCKER_HOST="unix://$DOCKER_SOCK"
  host_lock_take
  host_save
  kind_docker_start cluster
fi

for tool in docker kind helm kubectl; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is not installed (see e2e/kind/README.md)"
done
docker info >/dev/null 2>&1 || die "cannot talk to Docker (is the daemon running, may this user use it?)"

k() { kubectl --kubeconfig "$kubeconfig" "$@"; }

# wait_until SECONDS WHAT COMMAND... : retry COMMAND every 2 s until it succeeds.
wait_until() {
  local limit="$1" what="$2" start=$SECONDS
  shift 2
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS - start >= limit)); then die "$what: not after ${limit} s"; fi
    sleep 2
  done
}

mkdir -p "$state"
t0=$SECONDS

# --- the cluster ---------------------------------------------------------------
if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
  say "cluster $cluster exists; reusing it"
else
  if [[ $mode == offline ]]; then
    # No --wait: the nodes are Ready only once offline_cni has run.
    say "creating cluster $cluster (cluster-offline.yaml, image $KIND_NODE_IMAGE)"
    kind create cluster --name "$cluster" --config "$here/cluster-offline.yaml" --image "$KIND_NODE_IMAGE" --retain
  else
    say "creating cluster $cluster (cluster.yaml)"
    create=(kind create cluster --name "$cluster" --config "$here/cluster.yaml" --wait 120s)
    if [[ -n "${KIND_NODE_IMAGE:-}" ]]; then create+=(--image "$KIND_NODE_IMAGE"); fi
    "${create[@]}"
  fi
fi
kind get kubeconfig --name "$cluster" >"$kubeconfig"
chmod 600 "$kubeconfig"
if [[ $mode == offline ]]; then
  offline_cni "$cluster" "$kubeconfig"
  offline_cluster_ready "$kubeconfig"
fi

# --- images --------------------------------------------------------------------
if [[ $mode == offline ]]; then
  # Built before the cluster (offline_workload_images), as e2e/local makes them.
  ms_image="$OFFLINE_MESHSCALER_IMAGE"
  app_image="$OFFLINE_APP_IMAGE"
  sidecar_image="$OFFLINE_SIDECAR_IMAGE"
  metrics_server_image="$OFFLINE_METRICS_SERVER_IMAGE"
  export PROMETHEUS_IMAGE="$OFFLINE_PROMETHEUS_IMAGE"
  for tar in $OFFLINE_IMAGE_TARS; do
    say "loading $(basename "$tar") into the nodes"
    kind load image-archive "$tar" --name "$cluster"
  done
elif [[ "${SKIP_BUILD:-0}" != 1 ]]; then
  version="$(sed -nE 's/^project\(meshscaler VERSION ([0-9.]+).*/\1/p' "$repo/CMakeLists.txt")"
  revision="$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)"
  say "building $ms_image (the repository's Dockerfile; a few minutes the first time)"
  docker build -t "$ms_image" --build-arg "VERSION=$version" --build-arg "REVISION=$revision" "$repo"
  say "building $app_image and $sidecar_image (e2e/images/)"
  docker build -t "$app_image" "$repo/e2e/images/app"
  docker build -t "$sidecar_image" "$repo/e2e/images/sidecar"
fi
if [[ $mode == online ]]; then
  for image in "$ms_image" "$app_image" "$sidecar_image"; do
    say "loading $image into the nodes"
    kind load docker-image "$image" --name "$cluster"
  done
fi

# --- Prometheus and metrics-server ---------------------------------------------
say "installing Prometheus (e2e/kind/prometheus.yaml)"
k apply -f "$here/prometheus.yaml" >/dev/null
if [[ -n "${PROMETHEUS_IMAGE:-}" ]]; then
  k -n monitoring set image deployment/prometheus "prometheus=$PROMETHEUS_IMAGE" >/dev/null
fi
# A changed ConfigMap is only read at start.
k -n monitoring rollout restart deployment/prometheus >/dev/null
k -n monitoring rollout status deployment/prometheus --timeout=180s >/dev/null ||
  die "Prometheus did not become ready (kubectl -n monitoring describe pod)"
wait_until 60 "Prometheus on $prometheus_host_url" curl -sf "$prometheus_host_url/-/ready"

say "installing metrics-server ($metrics_server_image)"
# kind's kubelets serve self-signed certificates, which metrics-server cannot verify
# against the cluster CA the way it does in e2e/local.
sed -e "s#@IMAGE@#$metrics_server_image#" \
  -e 's#--kubelet-certificate-authority=.*#--kubelet-insecure-tls#' \
  "$repo/e2e/addons/metrics-server.yaml" | k apply -f - >/dev/null
k -n kube-system rollout status deployment/metrics-server --timeout=180s >/dev/null ||
  die "metrics-server did not become ready"

# --- meshscaler -----------------------------------------------------------------
say "installing meshscaler (charts/meshscaler, image $ms_image)"
# Helm installs crds/ only on the first install; apply it so a re-run upgrades it too.
k apply -f "$repo/charts/meshscaler/crds/" >/dev/null
existed=0
helm --kubeconfig "$kubeconfig" status meshscaler --namespace meshscaler-system >/dev/null 2>&1 && existed=1
helm --kubeconfig "$kubeconfig" upgrade --install meshscaler "$repo/charts/meshscaler" \
  --namespace meshscaler-system --create-namespace \
  --values "$here/values.yaml" \
  --set "image.repository=${ms_image%:*}" \
  --set "image.tag=${ms_image##*:}" \
  --set prometheus.url=http://prometheus.monitoring.svc:9090 \
  --wait --timeout 5m
if [[ $existed == 1 ]]; then
  # The same image tag after a rebuild: restart so the pods run the new image.
  k -n meshscaler-system rollout restart deployment/meshscaler >/dev/null
  k -n meshscaler-system rollout status deployment/meshscaler --timeout=180s >/dev/null ||
    die "the meshscaler Deployment did not become ready (kubectl -n meshscaler-system logs deployment/meshscaler)"
fi
# No --logs: the chart's test pod is deleted once it succeeds (hook-succeeded), and
# helm then fails to read its logs.
helm --kubeconfig "$kubeconfig" test meshscaler --namespace meshscaler-system ||
  die "helm test failed"

# --- the environment of the suite ---------------------------------------------
cluster_ip="$(k -n monitoring get service prometheus -o 'jsonpath={.spec.clusterIP}')"
cat >"$state/env" <<EOF
# Written by e2e/kind/up.sh: source it, then run tests/incluster/run.sh.
export KUBECONFIG=$kubeconfig
export KUBECTL=$(command -v kubectl)
export PROMETHEUS_URL=$prometheus_host_url
export PROMETHEUS_CLUSTER_URL=http://$cluster_ip:9090
export MESHSCALER_E2E_APP_IMAGE=$app_image
export MESHSCALER_E2E_SIDECAR_IMAGE=$sidecar_image
export MESHSCALER_IMAGE=$ms_image
export MESHSCALER_KIND_CLUSTER=$cluster
EOF
if [[ $mode == offline ]]; then
  cat >>"$state/env" <<EOF
export DOCKER_HOST=$DOCKER_HOST
export PATH=$KIND_BIN:$E2E_DIR/.bin:\$PATH
EOF
fi
say "up in $((SECONDS - t0)) s; the suite's environment is in $state/env:"
cat "$state/env"
echo
echo "  source $state/env && $repo/tests/incluster/run.sh"
