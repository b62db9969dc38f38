#!/usr/bin/env bash
# The in-cluster suite (tests/incluster/run.sh) on the local cluster of e2e/local:
# builds the controller's image from ./Dockerfile (cached by its sources) and imports
# it into the node, installs helm if missing, and hands over. The same suite runs on a
# kind cluster from e2e/kind/up.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
: "${MESHSCALER_E2E_STATE:?run inside the environment of e2e/local (eval \"\$(e2e/local env)\")}"
"$root/e2e/local" tools helm >/dev/null 2>&1
eval "$("$root/e2e/local" image meshscaler | grep '^MESHSCALER_IMAGE=')"
export MESHSCALER_IMAGE HELM="$root/e2e/.bin/helm"
exec bash "$root/tests/incluster/run.sh"
