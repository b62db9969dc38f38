#!/usr/bin/env bash
# down.sh - delete the kind cluster of e2e/kind/up.sh and its state (kubeconfig, env).
# The images stay in Docker (up.sh SKIP_BUILD=1 reuses them).
#
#   e2e/kind/down.sh            KIND_CLUSTER_NAME (meshscaler-e2e)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cluster="${KIND_CLUSTER_NAME:-meshscaler-e2e}"
state="${MESHSCALER_KIND_STATE:-$here/.state}"

command -v kind >/dev/null 2>&1 || { echo "[kind] error: kind is not installed" >&2; exit 1; }
if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
  kind delete cluster --name "$cluster"
else
  echo "[kind] no cluster named $cluster" >&2
fi
rm -rf "$state"
echo "[kind] down; removed $state" >&2
