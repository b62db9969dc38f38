#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# down.sh - delete the kind cluster of e2e/kind/up.sh and its state (kubeconfig, env).
# The images stay (up.sh reuses them: SKIP_BUILD=1 online, the cache offline).
#
#   e2e/kind/down.sh            KIND_CLUSTER_NAME (meshscaler-e2e)
#
# Offline (up.sh left .state/offline) it also removes kind's Docker network and any
# volume left, stops up.sh's Docker engine by its PID, puts back the host's iptables
# rules and sysctls saved before the engine first started (and prints any difference:
# then it exits 1), removes /lib/modules if kind's bind mount created it, and releases
# the node lock.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cluster="${KIND_CLUSTER_NAME:-meshscaler-e2e}"
state="${MESHSCALER_KIND_STATE:-$here/.state}"

say() { echo "[kind] $*" >&2; }
die() { progress_stop 2>/dev/null || true; echo "[kind] error: $*" >&2; exit 1; }

offline=0
if [[ -f $state/offline ]]; then
  offline=1
  # shellcheck source=offline.sh
  . "$here/offline.sh"
  export PATH="$KIND_BIN:$PATH"
  export DOCKER_HOST="unix://$DOCKER_SOCK"
  # The engine holds the cluster's containers; it must run to delete them.
  if [[ -z $(kind_docker_pid) ]] && [[ -d $KIND_DOCKER_ROOT/containers ]] && [[ -n $(ls -A "$KIND_DOCKER_ROOT/containers") ]]; then
    host_lock_take
    kind_docker_start cluster
  fi
fi

command -v kind >/dev/null 2>&1 || die "kind is not installed"
if [[ $offline == 0 ]] || [[ -n $(kind_docker_pid) ]]; then
  if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
    kind delete cluster --name "$cluster"
  else
    say "no cluster named $cluster"
  fi
fi

rc=0
if [[ $offline == 1 ]]; then
  if [[ -n $(kind_docker_pid) ]]; then
    # kind leaves its network; the nodes' anonymous /var volumes go with them (rm -v),
    # but a node that failed half-way may leave one.
    docker network rm kind >/dev/null 2>&1 || true
    docker volume ls -q | xargs -r docker volume rm >/dev/null || say "could not remove every volume"
    left="$(docker ps -aq; docker network ls -q --filter type=custom; docker volume ls -q)"
    [[ -z $left ]] || { say "left in the engine: $left"; rc=1; }
  fi
  kind_docker_stop
  if [[ -f $state/host/lib-modules-created ]]; then rmdir /lib/modules 2>/dev/null || true; fi
  host_restore || rc=1
  # A host left different keeps the lock: nobody else's node starts on it.
  if [[ $rc == 0 ]]; then host_lock_release; else say "keeping the node lock (pid $(lock_holder_pid)) until down.sh succeeds"; fi
fi
if [[ $rc == 0 ]]; then
  rm -rf "$state"
  echo "[kind] down; removed $state" >&2
else
  # The saved rules stay for a second down.sh (or a look by hand).
  echo "[kind] down, with the differences above; kept $state (saved host state in $state/host)" >&2
fi
exit "$rc"
