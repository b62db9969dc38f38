#!/usr/bin/env bash
# The README's first command: build meshscaler and replay the incident
# (../shared/INCIDENT.md) through the decision engine, both ways:
#   - blind: an autoscaler on the application's CPU, as on the day;
#   - aware: meshscaler on the sidecar's admission limit, with saturation
#     and retry-storm corrections.
# Offline for now (meshscaler decide); the live lab on a real control plane
# replaces this when the incident-lab issue lands.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/install-deps.sh build
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-release meshscaler >/dev/null
ms=build-release/meshscaler

cat <<'TEXT'

The incident: 4 replicas; each application handles 500 req/s, each sidecar
admits 180 attempts/s. 1,000 new requests/s arrive and clients retry 3 times,
so the sidecars refuse 1,921 of 2,641 attempts/s while the applications idle
at 36% CPU.

--- Blind: an HPA-style autoscaler on application CPU (target 70%) ---
TEXT
"$ms" decide -o text -f tests/scenarios/incident-blind.json
cat <<'TEXT'

--- Aware: meshscaler on sidecar concurrency (target 70% of the limit),
    with saturation correction and retry-storm discount ---
TEXT
"$ms" decide -o text -f tests/scenarios/incident-aware.json
cat <<'TEXT'

The blind autoscaler holds 4 replicas while three attempts in four are refused.
meshscaler scales to 8 in one step — logical demand (1,000 req/s) at 70% of
8 x 180 — the refusals stop, retries drain, and it holds.

Each line above is one decision; `meshscaler decide -f FILE` prints the same
decisions as JSON Lines (see docs/decide.md).
TEXT
