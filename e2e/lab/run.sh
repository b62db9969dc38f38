#!/usr/bin/env bash
# e2e/lab/run.sh SCENARIO — the incident lab: the same peak of offered load against two
# arms, side by side on real pods of the local one-node cluster, each arm a Deployment
# whose HAProxy sidecar admits fewer requests in flight than its application could take
# (the application idles near 36% of its CPU while the sidecar refuses work, as in
# ../shared/INCIDENT.md).
#
#   blind-vs-aware  (a) the real autoscaling/v2 HPA on the application's CPU
#                   (metrics-server; the autoscaler of the incident), with a MeshAutoscaler
#                   in shadow mode (dryRun) beside it; (b) meshscaler, installed
#                   in-cluster from its Helm chart, on the sidecar's in-flight requests
#                   with saturation correction. e2e/lab/blind-vs-aware.sh runs it.
#   retry-storm     clients retry a refused request at once, up to 3 times: (a)
#                   meshscaler without the retry-storm guard, (b) with it (it scales for
#                   the logical demand, not the retried attempts). e2e/lab/retry-storm.sh.
#   edge-flows      every pod keeps connections to a downstream through a load balancer
#                   whose flow table (maxconn) is the next limit, and needs them to
#                   serve; a bystander's clients share the balancer: (a) meshscaler
#                   without the downstream guardrail, (b) with it (scale out only while
#                   the balancer stays at or under 70%). --variant slow-start: new pods
#                   wait 20 s in an init container (not Running), both arms guarded:
#                   (a) with the per-object opt-out of the starting-pod reservation,
#                   (b) with it (SPEC §2 step 7). e2e/lab/edge-flows.sh runs both variants.
#   shared-edge     two services (shop and cart, two namespaces) and a bystander behind
#                   one balancer whose table fits neither's peak plus the other's, the
#                   peak hitting both at once; one variant a run: --variant own, each
#                   service with its own downstream guardrail; --variant budget, both
#                   naming one shared budget (the room split between them).
#                   e2e/lab/shared-edge.sh runs both.
#
#   e2e/lab/run.sh SCENARIO              full run: a 3-minute peak (about 6 minutes once built)
#   e2e/lab/run.sh SCENARIO --short      shortened run for a test command: a 1-minute peak
#                                        (about 3.5 minutes once built); retry-storm's
#                                        a 2-minute peak with the full 20 s start-up
#   options: --startup-delay S   a new pod's start-up delay (full 20, short 5)
#            --variant V         shared-edge: own or budget; edge-flows: slow-start
#            --keep              leave the cluster up at the end (`e2e/local down` later,
#                                with the same MESHSCALER_E2E_STATE)
#            --env local|kind    where the arms run (default local, or MESHSCALER_LAB_ENV):
#                                local, e2e/local's one-node cluster; kind, the kind
#                                cluster of e2e/kind/up.sh through e2e/kind/labenv, which
#                                has e2e/local's subcommands (e2e/lab/README.md, "On kind")
#
# One script: it builds what is missing (the load client, the lab app's image, the
# cluster's and meshscaler's images), brings the local one-node cluster up
# (e2e/local, state in $MESHSCALER_E2E_STATE, default e2e/lab/.state), installs the
# chart, runs both arms side by side in two namespaces with one open-loop load client
# each (meshscaler-load, same profile and seed, through an edge HAProxy to each
# Service's ClusterIP), streams meshscaler's decisions (and the HPA's readings) to the
# terminal, then writes e2e/lab/results/SCENARIO/{summary.json, series.json,
# chart.svg, chart.png} and tears everything down.
#
# It asserts the directions of the acceptance (issues 12 and 22) and prints one ok/FAIL
# line each, then `N passed, N failed`; exit 1 on a failure. See e2e/lab/README.md.
# Timings are figures, not gates. `python3 e2e/lab/lib/report.py
# e2e/lab/results/SCENARIO/logs/params.json --replay` redoes the report offline.
set -uo pipefail

LAB="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$LAB/../.." && pwd)"
export MESHSCALER_E2E_STATE="${MESHSCALER_E2E_STATE:-$LAB/.state}"
LAB_ENV="${MESHSCALER_LAB_ENV:-local}"

SCENARIO="${1:-}"
case "$SCENARIO" in
  blind-vs-aware|retry-storm|edge-flows|shared-edge) shift ;;
  -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  *) echo "e2e/lab/run.sh: want a scenario: blind-vs-aware, retry-storm, edge-flows or shared-edge (see --help)" >&2; exit 2 ;;
esac
OUT="$LAB/results/$SCENARIO"
MODE=full
KEEP=0
STARTUP_DELAY=""
VARIANT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --short) MODE=short; shift ;;
    --variant) VARIANT="${2:-}"; shift 2 || shift ;;
    --keep) KEEP=1; shift ;;
    --startup-delay) STARTUP_DELAY="$2"; shift 2 ;;
    --env) LAB_ENV="${2:-}"; shift 2 || shift ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "$SCENARIO: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
# The environment, always through the same subcommands (up, env, image load, image
# meshscaler, tools helm, ports, prometheus targets add, down). Its servers on the
# host (the load clients' and the HAProxy exporters) bind MESHSCALER_E2E_SCRAPE_HOST,
# where its Prometheus reaches them: e2e/local's runs on the host (127.0.0.1), kind's
# in a pod (the host's address on kind's network, from `labenv env`).
case "$LAB_ENV" in
  local) E2E="$REPO/e2e/local" ENV_NAME=local UP_FIRST="~16 min" UP_LATER="~45 s" ;;
  kind) E2E="$REPO/e2e/kind/labenv" ENV_NAME=kind UP_FIRST="~1 h (offline: e2e/kind/README.md)" UP_LATER="~1.5 min" ;;
  *) echo "$SCENARIO: --env local or --env kind, not '$LAB_ENV'" >&2; exit 2 ;;
esac
E2E_CMD="${E2E#"$REPO/"}"
case "$SCENARIO:$VARIANT" in
  shared-edge:own|shared-edge:budget|edge-flows:slow-start) OUT="$LAB/results/$SCENARIO-$VARIANT" ;;
  shared-edge:*) echo "shared-edge: want --variant own or --variant budget" >&2; exit 2 ;;
  *:) ;;
  edge-flows:*) echo "edge-flows: the one --variant is slow-start" >&2; exit 2 ;;
  *) echo "$SCENARIO: --variant is shared-edge's and edge-flows' option" >&2; exit 2 ;;
esac

# --- the experiment's numbers ---------------------------------------------------------
# Each pod: the sidecar admits SIDECAR_MAXCONN requests in flight to the app; a request
# holds the app HOLD_MS ms, so a pod admits 10 / 0.2 s = 50 requests/s. The app itself
# could take 28 in flight (140/s: its CPU request is sized so 140/s would be 100%), so
# at the sidecar's limit it reads about 36% of its CPU, as in the incident.
START_REPLICAS=2      # 100 requests/s admitted at the start
MAX_REPLICAS=16       # above what the peak needs (10 at 70%), so the max does not decide
SIDECAR_MAXCONN=10
QUEUE_TIMEOUT_S=1     # a request queued this long in the sidecar gets a 503
HOLD_MS=200
CPU_US=400            # + ~0.1 ms of HTTP handling: ~26m of CPU at 50 requests/s
APP_WORKERS=28
APP_CPU_REQUEST=70m
SIDECAR_CPU_REQUEST=10m
TARGET_UTILIZATION=70 # both arms: HPA 70% of the app's CPU request, meshscaler 70% of maxconn
# retry-storm: the guard's threshold, the resource's default (the storm's share, as
# the edge proxy counts it, runs well above it: e2e/lab/README.md).
RETRY_THRESHOLD="${RETRY_THRESHOLD:-0.3}"
RATE_WINDOW=5s        # meshscaler's saturation rates (Prometheus scrapes every 1 s)
MESH_SYNC_S=5         # meshscaler's --sync-period (chart controller.syncPeriod)
HPA_SYNC_S=15         # kube-controller-manager's --horizontal-pod-autoscaler-sync-period: e2e/local
                      # does not set it, so it is the default, 15 s
BASE_RATE=40          # 0.4x what the starting replicas admit
PEAK_RATE=350         # 3.5x
RAMP_S=2
# First scale and recovery times are figures (summary.json); the checks assert only
# their direction (scaled during the peak, recovered before it ended).
# retry-storm's --short keeps the full run's 20 s start-up and a 2-minute peak: the
# guard's discount adds up over the syncs a storm lasts, and with a 5 s start-up the
# storm is over in one or two (both arms then peak within a replica: e2e/lab/README.md).
if [ "$MODE" = short ] && [ "$SCENARIO" = retry-storm ]; then
  BASE_S=15; HOLD_S=120; TAIL_S=8; STARTUP_DELAY="${STARTUP_DELAY:-20}"
elif [ "$MODE" = short ]; then
  BASE_S=15; HOLD_S=60; TAIL_S=8; STARTUP_DELAY="${STARTUP_DELAY:-5}"
else
  BASE_S=30; HOLD_S=180; TAIL_S=30; STARTUP_DELAY="${STARTUP_DELAY:-20}"
fi
PROFILE="peak:$BASE_RATE:$PEAK_RATE:$RAMP_S:$HOLD_S:$BASE_S"
REL=lab NS_SYS=lab-system
# The arms: a key each (the load client's target is lab-load-KEY, its namespace lab-KEY).
if [ "$SCENARIO" = blind-vs-aware ]; then
  RETRY=none          # retries are the retry-storm scenario's subject
  ARM_A=hpa ARM_B=mesh
  LABEL_A="(a) HPA on app CPU" LABEL_B="(b) meshscaler"
  TITLE_A="(a) HPA on the app's CPU (metrics-server, target ${TARGET_UTILIZATION}%, sync ${HPA_SYNC_S} s)"
  TITLE_B="(b) meshscaler on sidecar concurrency + saturation correction (target ${TARGET_UTILIZATION}%, sync ${MESH_SYNC_S} s)"
  AUTOSCALER_A="autoscaling/v2 HPA, ContainerResource cpu of container app, ${TARGET_UTILIZATION}% of request; kube-controller-manager sync period ${HPA_SYNC_S} s (its default), metrics-server resolution 15 s; a MeshAutoscaler in dryRun beside it"
  HEADLINE="blind-vs-aware: the same peak (%d -> %d requests/s) against a CPU HPA and meshscaler"
elif [ "$SCENARIO" = retry-storm ]; then
  RETRY=immediate:3   # a refused request is tried again at once, up to 3 times
  ARM_A=noguard ARM_B=guard
  LABEL_A="(a) no guard" LABEL_B="(b) retry guard"
  TITLE_A="(a) meshscaler without the retry-storm guard (target ${TARGET_UTILIZATION}%, sync ${MESH_SYNC_S} s)"
  TITLE_B="(b) meshscaler with the retry-storm guard, threshold ${RETRY_THRESHOLD} (target ${TARGET_UTILIZATION}%, sync ${MESH_SYNC_S} s)"
  AUTOSCALER_A="meshscaler (Helm chart, in-cluster, live) SidecarConcurrency haproxy ${TARGET_UTILIZATION}% of maxconn, saturation correction over ${RATE_WINDOW}; no retry-storm guard"
  HEADLINE="retry-storm: the same peak (%d -> %d requests/s), clients retrying at once, without and with the guard"
  MAX_REPLICAS=24     # room for the storm's inflated demand, so the max does not decide
  # No HPA reads the app's CPU here: a small request lets both arms' pods fit on the
  # one node (at 80m a pod, 24 + 15 pods would not: measured, 23 became Ready).
  APP_CPU_REQUEST=20m
  # Up to 4 attempts per logical request: a peak of 350/s would offer 1,400 attempts
  # per second and arm, more than two shared cores serve (measured: metastable).
  # RETRY_HOLD_MS=500 with RETRY_BASE_RATE=16 RETRY_PEAK_RATE=100 is the same storm
  # with slower pods (20/s each), fewer attempts (e2e/lab/README.md has both runs).
  HOLD_MS="${RETRY_HOLD_MS:-$HOLD_MS}"
  BASE_RATE="${RETRY_BASE_RATE:-$BASE_RATE}"
  PEAK_RATE="${RETRY_PEAK_RATE:-150}"
  PROFILE="peak:$BASE_RATE:$PEAK_RATE:$RAMP_S:$HOLD_S:$BASE_S"
elif [ "$SCENARIO" = edge-flows ]; then
  RETRY=none
  ARM_A=noguard ARM_B=guard
  LABEL_A="(a) no downstream guard" LABEL_B="(b) downstream guard"
  # Every pod keeps POOL_CONNS connections through the balancer, whose frontend admits
  # LB_FLOWS: the table is full at LB_FLOWS / POOL_CONNS = 8 pods, fewer than the
  # peak's 10 (at 70%); the guard stops at 70% of it, 5 pods (125 flows).
  POOL_CONNS=25
  LB_FLOWS=200
  LB_MAX_UTILIZATION=0.7
  BYSTANDER_RATE=20   # requests/s of the bystander behind the same balancer, a new flow each
  TITLE_A="(a) meshscaler without the downstream guardrail (target ${TARGET_UTILIZATION}%, sync ${MESH_SYNC_S} s)"
  TITLE_B="(b) meshscaler with the downstream guardrail: balancer at most $(python3 -c "print(round($LB_MAX_UTILIZATION*100))")% of ${LB_FLOWS} flows, ${POOL_CONNS} a pod"
  AUTOSCALER_A="meshscaler (Helm chart, in-cluster, live) SidecarConcurrency haproxy ${TARGET_UTILIZATION}% of maxconn, saturation correction over ${RATE_WINDOW}; no downstream guardrail"
  HEADLINE="edge-flows: the same peak (%d -> %d requests/s); each pod holds ${POOL_CONNS} of a balancer's ${LB_FLOWS} flows"
  APP_CPU_REQUEST=20m # no HPA reads the app's CPU; both arms' pods fit on the node
  if [ "$VARIANT" = slow-start ]; then
    # Both arms guarded; every new pod waits SLOW_START_S in an init container (phase
    # Pending: an image pull or a node being added looks so), so for that long it has
    # opened none of its pool. Syncs every 5 s: without the reservation each sees the
    # table as the two running pods left it (50 flows) and grants the same 3 replicas
    # of room again (2 -> 5 -> 8 -> 10: 250 flows, past the table's 200); with it the
    # 3 starting replicas reserve 75 flows and the count stays at 5 (125, 62.5%).
    SLOW_START_S=20
    ARM_A=noreserve ARM_B=reserve
    LABEL_A="(a) no reservation" LABEL_B="(b) reservation"
    TITLE_A="(a) downstream guardrail, starting-pod reservation off (annotation), pods start 20 s late"
    TITLE_B="(b) downstream guardrail with the starting-pod reservation, pods start 20 s late"
    AUTOSCALER_A="meshscaler (Helm chart, in-cluster, live) SidecarConcurrency haproxy ${TARGET_UTILIZATION}% of maxconn, saturation correction over ${RATE_WINDOW}; downstream guardrail on the balancer's flow table (${POOL_CONNS} flows a replica, at most ${LB_MAX_UTILIZATION} of its limit) with the annotation autoscaling.meshscaler.io/starting-pod-reservation=false"
    HEADLINE="edge-flows, slow start: the same peak (%d -> %d requests/s); pods start ${SLOW_START_S} s late, then hold ${POOL_CONNS} of a balancer's ${LB_FLOWS} flows"
  fi
else
  # shared-edge: the arms are two services behind ONE balancer frontend, one pod each
  # at the start (50 of its 250 flows, 25 a pod; full at 10 pods). Each needs 9 pods at
  # 70% for its 300/s, so either's peak fits the table but not both. The guardrail's
  # 70% is 175 flows: room for 5 replicas more. Own guards: each sees all 5 in the
  # first round (up to 10 pods, a full table). One budget: 5 split between them,
  # namespaces first (3 and 2: 4 and 3 pods, 175 flows). Both variants need the first
  # asks to add up to more than the room. (At 2 pods each and 150/s the asks, 4 and 3,
  # fitted the room unsplit; at 200/s a CI run's first asks, read 4.5 s into the peak
  # with 5 s rates, were 3 and 4, exactly the room, and the own guards stopped at 70%:
  # the checks could not tell the variants apart; 2026-12-07/08. At 300/s the same
  # phase asks the rate policy's 5 each.)
  START_REPLICAS=1
  RETRY=none
  ARM_A=shop ARM_B=cart
  LABEL_A="(a) shop" LABEL_B="(b) cart"
  POOL_CONNS=25
  LB_FLOWS=250
  LB_MAX_UTILIZATION=0.7
  BYSTANDER_RATE=20
  BASE_RATE=20 # 40% of the one pod at the start
  PEAK_RATE=300
  PROFILE="peak:$BASE_RATE:$PEAK_RATE:$RAMP_S:$HOLD_S:$BASE_S"
  APP_CPU_REQUEST=20m
  if [ "$VARIANT" = budget ]; then
    GUARD_TEXT="both name the shared budget edge on one balancer (its room split between them)"
  else
    GUARD_TEXT="each with its own downstream guardrail on one balancer (no budget)"
  fi
  TITLE_A="(a) shop: meshscaler, $GUARD_TEXT"
  TITLE_B="(b) cart: meshscaler, $GUARD_TEXT"
  AUTOSCALER_A="meshscaler (Helm chart, in-cluster, live) SidecarConcurrency haproxy ${TARGET_UTILIZATION}% of maxconn, saturation correction over ${RATE_WINDOW}; downstream guardrail on the shared balancer's flow table: ${POOL_CONNS} flows a replica, at most ${LB_MAX_UTILIZATION} of its limit$([ "$VARIANT" = budget ] && echo ", budget edge")"
  HEADLINE="shared-edge, $VARIANT: %d -> %d requests/s on two services behind one balancer (${LB_FLOWS} flows, ${POOL_CONNS} a pod)"
fi
AUTOSCALER_B="meshscaler (Helm chart, in-cluster, live) SidecarConcurrency haproxy ${TARGET_UTILIZATION}% of maxconn, saturation correction (refused/admitted rates over ${RATE_WINDOW}); sync period ${MESH_SYNC_S} s$([ "$SCENARIO" = retry-storm ] && echo "; retry-storm guard, threshold ${RETRY_THRESHOLD}, retry share from the edge HAProxy's counters of requests marked x-retry-attempt")$([ "$SCENARIO" = edge-flows ] && echo "; downstream guardrail on the balancer's flow table: ${POOL_CONNS} flows a replica, at most ${LB_MAX_UTILIZATION} of its limit")"
[ "$SCENARIO" != shared-edge ] || AUTOSCALER_B="$AUTOSCALER_A"
[ "$VARIANT" != slow-start ] || AUTOSCALER_B="${AUTOSCALER_A% with the annotation*} with the starting-pod reservation (SPEC §2 step 7)"
NS_A="lab-$ARM_A" NS_B="lab-$ARM_B"
SLOW_START_S="${SLOW_START_S:-0}"
POD_ADMITS=$((SIDECAR_MAXCONN * 1000 / HOLD_MS))
DURATION_S=$((BASE_S + RAMP_S + HOLD_S + RAMP_S + TAIL_S))

T_START=$SECONDS
say() { progress_clear; printf '[lab] %s\n' "$*"; }
die() { progress_stop; printf '[lab] error: %s\n' "$*" >&2; exit 1; }
# Long steps show a progress line (e2e/lib/progress.sh) on the lab's own stream.
PROGRESS_PREFIX="[lab]" PROGRESS_FD=1
# shellcheck source=e2e/lib/progress.sh
. "$REPO/e2e/lib/progress.sh"
PIDS=()
cleanup() {
  local rc=$? pid t
  progress_stop
  for pid in "${PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [ "$KEEP" -eq 1 ]; then
    say "--keep: the cluster stays up; stop it with: MESHSCALER_E2E_STATE=$MESHSCALER_E2E_STATE $E2E_CMD down"
  elif [ -e "$MESHSCALER_E2E_STATE" ]; then
    t=$SECONDS
    "$E2E" down >"$OUT/logs/down.log" 2>&1 || say "$E2E_CMD down failed (log: $OUT/logs/down.log)"
    T_DOWN=$((SECONDS - t))
    say "down in $T_DOWN s"
  fi
  say "total $((SECONDS - T_START)) s"
  if [ -n "${REPORTED:-}" ] && [ -f "$OUT/summary.json" ]; then
    python3 - "$OUT/summary.json" "${T_DOWN:-}" "$((SECONDS - T_START))" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
if sys.argv[2]:
    s["timings_s"]["down_s"] = int(sys.argv[2])
s["timings_s"]["total_s"] = int(sys.argv[3])
json.dump(s, open(sys.argv[1], "w"), indent=2)
PY
  fi
  exit "$rc"
}
mkdir -p "$OUT/logs"
rm -f "$OUT"/logs/*.log "$OUT"/logs/*.json
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- build what is missing --------------------------------------------------------------
t=$SECONDS
progress_run "installing the build packages (apt)" "~15 s" "nothing to do" "$OUT/logs/deps.log" \
  bash "$REPO/scripts/install-deps.sh" build || { tail -n 5 "$OUT/logs/deps.log"; die "scripts/install-deps.sh build failed (log: $OUT/logs/deps.log)"; }
BUILD="$LAB/.build"
if [ ! -f "$BUILD/build.ninja" ]; then
  say "configuring $BUILD (Release)"
  cmake -S "$REPO" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >"$OUT/logs/cmake.log" 2>&1 \
    || die "cmake failed (log: $OUT/logs/cmake.log)"
fi
progress_run "building meshscaler-load" "~30 s" "~1 s" "$OUT/logs/ninja.log" ninja -C "$BUILD" meshscaler-load \
  || die "building meshscaler-load failed (log: $OUT/logs/ninja.log)"
LOAD="$BUILD/e2e/lab/load/meshscaler-load"

# The lab app (the cluster's test app, e2e/images/app/app.c): a static binary in a
# one-layer image, no Docker.
APP_SRC="$REPO/e2e/images/app/app.c"
mkdir -p "$LAB/.cache"
tag="$(cat "$APP_SRC" "$LAB/lib/image_tar.py" <(gcc --version | head -n 1) | sha256sum | cut -c1-12)"
LAB_APP_IMAGE="localhost/meshscaler-e2e/lab-app:$tag"
LAB_APP_TAR="$LAB/.cache/lab-app-$tag.tar"
if [ ! -f "$LAB_APP_TAR" ]; then
  root="$(mktemp -d)"
  gcc -static -O2 -Wall -Wextra -Werror -pthread -s -o "$root/app" "$APP_SRC" || die "could not build the lab app"
  python3 "$LAB/lib/image_tar.py" "$LAB_APP_IMAGE" "$root" "$LAB_APP_TAR" /app || die "could not write $LAB_APP_TAR"
  rm -rf "$root"
  find "$LAB/.cache" -name 'lab-app-*.tar' ! -name "lab-app-$tag.tar" -delete
  say "made $LAB_APP_IMAGE"
fi
T_BUILD=$((SECONDS - t))

# --- the cluster -------------------------------------------------------------------------
t=$SECONDS
say "bringing the $ENV_NAME cluster up (state $MESHSCALER_E2E_STATE; log $OUT/logs/up.log)"
say "  a first run builds it from source: $UP_FIRST on 2 cores (later runs $UP_LATER)"
# Its progress line shows the last line of up.log: e2e/local's own phase and progress.
progress_run "bringing the $ENV_NAME cluster up" "$UP_FIRST" "$UP_LATER" "$OUT/logs/up.log" "$E2E" up \
  || { tail -n 20 "$OUT/logs/up.log" >&2; die "$E2E_CMD up failed"; }
MESHSCALER_E2E_SCRAPE_HOST=127.0.0.1
eval "$("$E2E" env)"
SCRAPE_HOST="$MESHSCALER_E2E_SCRAPE_HOST"
T_UP=$((SECONDS - t))
say "cluster up in $T_UP s"

t=$SECONDS
k() { "$KUBECTL" "$@"; }
lab_ports() { "$E2E" ports "$1" || die "no free ports"; }
# Install and warm-up: one progress line over its steps, showing the last line of
# install.log (the step, or e2e/local's own progress while it builds).
INSTALL_LOG="$OUT/logs/install.log"
step() { printf '%s\n' "$*" >>"$INSTALL_LOG"; }
progress_start "installing meshscaler and warming up" "~3.5 min" "~45 s" progress_tail "$INSTALL_LOG"
"$E2E" image load "$LAB_APP_TAR" || die "could not import the lab app's image"
step "meshscaler's image ($E2E_CMD image meshscaler)"
eval "$("$E2E" image meshscaler 2>>"$INSTALL_LOG" | grep '^MESHSCALER_IMAGE=')"
[ -n "${MESHSCALER_IMAGE:-}" ] || die "no meshscaler image (log: $INSTALL_LOG)"
step "helm ($E2E_CMD tools helm)"
"$E2E" tools helm >>"$INSTALL_LOG" 2>&1 || die "could not install helm ($E2E_CMD tools helm; log: $INSTALL_LOG)"
HELM="$REPO/e2e/.bin/helm"

# A kept cluster may hold an earlier run's objects.
"$HELM" uninstall "$REL" -n "$NS_SYS" --wait >/dev/null 2>&1 || true
k delete namespace "$NS_A" "$NS_B" --ignore-not-found --wait=true --timeout=120s >/dev/null 2>&1 || true

export LAB_APP_IMAGE START_REPLICAS MAX_REPLICAS APP_WORKERS CPU_US HOLD_MS STARTUP_DELAY APP_CPU_REQUEST \
  SIDECAR_CPU_REQUEST SIDECAR_MAXCONN TARGET_UTILIZATION RATE_WINDOW RETRY_THRESHOLD SCENARIO \
  POOL_CONNS LB_FLOWS LB_MAX_UTILIZATION SLOW_START_S
export QUEUE_TIMEOUT="${QUEUE_TIMEOUT_S}s"
# shellcheck source=e2e/lab/lib/objects.sh
. "$LAB/lib/objects.sh"
# edge-flows: the balancer the pods' pools go through, up before the pods.
POOL_A="" POOL_B=""
if [ "$SCENARIO" = edge-flows ]; then
  read -r LB_POOL_A LB_POOL_B LB_BYS_A LB_BYS_B LB_EXPORTER BYS_PORT_A BYS_PORT_B < <(lab_ports 7)
  lb_config "$LB_EXPORTER" "$MESHSCALER_E2E_NODE_IP" "lb-$ARM_A:$LB_POOL_A:$LB_BYS_A" "lb-$ARM_B:$LB_POOL_B:$LB_BYS_B" \
    >"$OUT/logs/lb.cfg"
  haproxy -c -q -f "$OUT/logs/lb.cfg" || die "haproxy rejected $OUT/logs/lb.cfg"
  haproxy -db -f "$OUT/logs/lb.cfg" >"$OUT/logs/lb.log" 2>&1 &
  PIDS+=($!)
  "$E2E" prometheus targets add lab-lb "$SCRAPE_HOST:$LB_EXPORTER" >/dev/null 2>&1
  POOL_A="$MESHSCALER_E2E_NODE_IP:$LB_POOL_A" POOL_B="$MESHSCALER_E2E_NODE_IP:$LB_POOL_B"
  say "balancer: $LB_FLOWS flows per arm, $POOL_CONNS a pod (lb-$ARM_A $POOL_A, lb-$ARM_B $POOL_B)"
elif [ "$SCENARIO" = shared-edge ]; then
  # One frontend, lb-edge, for both services' pools and the bystander.
  read -r LB_POOL LB_BYS LB_EXPORTER BYS_PORT < <(lab_ports 4)
  lb_config "$LB_EXPORTER" "$MESHSCALER_E2E_NODE_IP" "lb-edge:$LB_POOL:$LB_BYS" >"$OUT/logs/lb.cfg"
  haproxy -c -q -f "$OUT/logs/lb.cfg" || die "haproxy rejected $OUT/logs/lb.cfg"
  haproxy -db -f "$OUT/logs/lb.cfg" >"$OUT/logs/lb.log" 2>&1 &
  PIDS+=($!)
  "$E2E" prometheus targets add lab-lb "$SCRAPE_HOST:$LB_EXPORTER" >/dev/null 2>&1
  POOL_A="$MESHSCALER_E2E_NODE_IP:$LB_POOL" POOL_B="$POOL_A"
  say "balancer: one table of $LB_FLOWS flows for both services, $POOL_CONNS a pod (lb-edge $POOL_A)"
fi
say "workloads: $START_REPLICAS pods each in $NS_A and $NS_B (sidecar maxconn $SIDECAR_MAXCONN, app ${HOLD_MS} ms per request, start-up delay ${STARTUP_DELAY} s$([ "$SLOW_START_S" -gt 0 ] && echo " after ${SLOW_START_S} s in an init container"))"
{ workload "$NS_A" "$POOL_A"; echo ---; workload "$NS_B" "$POOL_B"; } | k apply -f - >/dev/null || die "could not apply the workloads"

say "installing meshscaler with its Helm chart ($MESHSCALER_IMAGE, live, sync period ${MESH_SYNC_S}s)"
step "helm install --wait"
# userQueries=allow: the guardrails read the host's HAProxy balancers, whose series
# name no namespace (the chart's default, namespaced, would refuse those queries).
"$HELM" install "$REL" "$REPO/charts/meshscaler" -n "$NS_SYS" --create-namespace \
  --set "image.repository=${MESHSCALER_IMAGE%:*}" --set "image.tag=${MESHSCALER_IMAGE##*:}" \
  --set "prometheus.url=$PROMETHEUS_CLUSTER_URL" --set "controller.syncPeriod=${MESH_SYNC_S}s" \
  --set replicaCount=1 --set controller.logLevel=debug --set controller.userQueries=allow --wait --timeout 180s >"$OUT/logs/helm.log" 2>&1 \
  || { cat "$OUT/logs/helm.log" >&2; die "helm install failed"; }
if [ "$SCENARIO" = blind-vs-aware ]; then
  { hpa "$NS_A"; echo ---; shadow_mas "$NS_A"; echo ---; mas "$NS_B"; } | k apply -f - >/dev/null
elif [ "$SCENARIO" = retry-storm ]; then
  { mas "$NS_A"; echo ---; mas "$NS_B" "edge-$ARM_B"; } | k apply -f - >/dev/null
elif [ "$SCENARIO" = edge-flows ] && [ "$VARIANT" = slow-start ]; then
  { mas_no_reservation "$NS_A" "" "lb-$ARM_A"; echo ---; mas "$NS_B" "" "lb-$ARM_B"; } | k apply -f - >/dev/null
elif [ "$SCENARIO" = edge-flows ]; then
  { mas "$NS_A"; echo ---; mas "$NS_B" "" "lb-$ARM_B"; } | k apply -f - >/dev/null
else
  budget=""; [ "$VARIANT" = own ] || budget=edge
  { mas "$NS_A" "" lb-edge "$budget"; echo ---; mas "$NS_B" "" lb-edge "$budget"; } | k apply -f - >/dev/null
fi || die "could not apply the autoscalers"

eventually() { # eventually SECONDS WHAT CMD...
  local secs="$1" what="$2" deadline=$((SECONDS + $1)); shift 2
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $deadline ] || die "$what: not after $secs s"
    sleep 1
  done
}
ready() { [ "$(k -n "$1" get deploy web -o 'jsonpath={.status.readyReplicas}')" = "$START_REPLICAS" ]; }
step "waiting for the workloads' pods and the autoscalers' first readings"
eventually 120 "$NS_A/web Ready" ready "$NS_A"
eventually 120 "$NS_B/web Ready" ready "$NS_B"
# The HPA acts only once metrics-server has a CPU window of the pods (15 s resolution)
# and its controller has synced; meshscaler once Prometheus has scraped the sidecars.
hpa_reads() { [ -n "$(k -n "$NS_A" get hpa web -o 'jsonpath={.status.currentMetrics[0].containerResource.current.averageUtilization}')" ]; }
mas_reads() { [ -n "$(k -n "$1" get mas web -o 'jsonpath={.status.currentMetrics[0].value}')" ]; }
if [ "$SCENARIO" = blind-vs-aware ]; then
  eventually 180 "the HPA reads the app's CPU" hpa_reads
else
  eventually 120 "meshscaler reads the sidecars of $NS_A" mas_reads "$NS_A"
fi
eventually 120 "meshscaler reads the sidecars of $NS_B" mas_reads "$NS_B"
T_INSTALL=$((SECONDS - t))
progress_stop
say "installed and warm in $T_INSTALL s"

# --- the run -----------------------------------------------------------------------------
IP_A="$(k -n "$NS_A" get service web -o 'jsonpath={.spec.clusterIP}')"
IP_B="$(k -n "$NS_B" get service web -o 'jsonpath={.spec.clusterIP}')"
read -r PORT_A PORT_B EDGE_A EDGE_B EDGE_EXPORTER < <(lab_ports 5)
edge_config "$EDGE_EXPORTER" "edge-$ARM_A:$EDGE_A:$IP_A" "edge-$ARM_B:$EDGE_B:$IP_B" >"$OUT/logs/edge.cfg"
haproxy -c -q -f "$OUT/logs/edge.cfg" || die "haproxy rejected $OUT/logs/edge.cfg"
haproxy -db -f "$OUT/logs/edge.cfg" >"$OUT/logs/edge.log" 2>&1 &
PIDS+=($!)
edge_up() { curl -sf -o /dev/null "http://127.0.0.1:$EDGE_A/work" && curl -sf -o /dev/null "http://127.0.0.1:$EDGE_B/work"; }
eventually 20 "the edge HAProxy answers through both Services" edge_up
"$E2E" prometheus targets add "lab-load-$ARM_A" "$SCRAPE_HOST:$PORT_A" "arm=$ARM_A" >/dev/null 2>&1
"$E2E" prometheus targets add "lab-load-$ARM_B" "$SCRAPE_HOST:$PORT_B" "arm=$ARM_B" >/dev/null 2>&1
"$E2E" prometheus targets add lab-edge "$SCRAPE_HOST:$EDGE_EXPORTER" >/dev/null 2>&1

FOLLOW=(python3 "$LAB/lib/follow.py")
"${FOLLOW[@]}" --log "$OUT/logs/replicas.log" -- "$KUBECTL" get deploy -A -l "lab.meshscaler.io/scenario=$SCENARIO" \
  --watch -o 'jsonpath={.metadata.namespace} {.metadata.name} {.spec.replicas} {.status.readyReplicas}{"\n"}' &
PIDS+=($!)
if [ "$SCENARIO" = blind-vs-aware ]; then
  "${FOLLOW[@]}" --log "$OUT/logs/hpa.log" --show hpa --prefix "[hpa]        " -- "$KUBECTL" -n "$NS_A" get hpa web --watch \
    -o 'jsonpath={.metadata.namespace}/{.metadata.name}|{.status.currentMetrics[0].containerResource.current.averageUtilization}|{.status.desiredReplicas}{"\n"}' &
  PIDS+=($!)
fi
"${FOLLOW[@]}" --log "$OUT/logs/decisions.log" --show meshscaler --prefix "[meshscaler] " -- "$KUBECTL" -n "$NS_SYS" \
  logs -f "deploy/$REL-meshscaler" --tail=0 &
PIDS+=($!)
sleep 1

say "load: $PROFILE over ${DURATION_S} s (base ${BASE_RATE}/s, peak ${PEAK_RATE}/s from t=${BASE_S}s for ${HOLD_S}s), retry $RETRY"
say "  side by side: $LABEL_A -> edge :$EDGE_A -> Service $IP_A; $LABEL_B -> edge :$EDGE_B -> Service $IP_B"
T0="$(python3 -c 'import time; print("%.3f" % time.time())')"
t=$SECONDS
for arm in "$ARM_A" "$ARM_B"; do
  if [ "$arm" = "$ARM_A" ]; then edge=$EDGE_A port=$PORT_A; else edge=$EDGE_B port=$PORT_B; fi
  "$LOAD" --url "http://127.0.0.1:$edge/work" --profile "$PROFILE" --duration "$DURATION_S" --retry "$RETRY" --seed 12 \
    --timeout-ms 3000 --max-in-flight 4000 --metrics-addr "$SCRAPE_HOST:$port" \
    --summary "$OUT/logs/load-$arm.json" >"$OUT/logs/load-$arm.out" 2>"$OUT/logs/load-$arm.err" &
  PIDS+=($!)
  if [ "$arm" = "$ARM_A" ]; then LOAD_PID_A=$!; else LOAD_PID_B=$!; fi
done

if [ "$SCENARIO" = shared-edge ]; then
  "$E2E" prometheus targets add lab-bystander-edge "$SCRAPE_HOST:$BYS_PORT" >/dev/null 2>&1
  "$LOAD" --url "http://127.0.0.1:$LB_BYS/other" --profile "steady:$BYSTANDER_RATE" --duration "$DURATION_S" --seed 13 \
    --timeout-ms 3000 --metrics-addr "$SCRAPE_HOST:$BYS_PORT" --summary "$OUT/logs/bystander-edge.json" \
    >"$OUT/logs/bystander-edge.out" 2>"$OUT/logs/bystander-edge.err" &
  PIDS+=($!)
fi
if [ "$SCENARIO" = edge-flows ]; then
  for arm in "$ARM_A" "$ARM_B"; do
    if [ "$arm" = "$ARM_A" ]; then bys=$LB_BYS_A port=$BYS_PORT_A; else bys=$LB_BYS_B port=$BYS_PORT_B; fi
    "$E2E" prometheus targets add "lab-bystander-$arm" "$SCRAPE_HOST:$port" "arm=$arm" >/dev/null 2>&1
    "$LOAD" --url "http://127.0.0.1:$bys/other" --profile "steady:$BYSTANDER_RATE" --duration "$DURATION_S" --seed 13 \
      --timeout-ms 3000 --metrics-addr "$SCRAPE_HOST:$port" --summary "$OUT/logs/bystander-$arm.json" \
      >"$OUT/logs/bystander-$arm.out" 2>"$OUT/logs/bystander-$arm.err" &
    PIDS+=($!)
  done
fi

MESH_A=false; [ "$SCENARIO" = blind-vs-aware ] || MESH_A=true
# Each arm's balancer frontend and bystander (edge-flows: one each; shared-edge: one for both).
LBP_A="lb-$ARM_A" LBP_B="lb-$ARM_B" BYS_A="$ARM_A" BYS_B="$ARM_B"
if [ "$SCENARIO" = shared-edge ]; then LBP_A=lb-edge LBP_B=lb-edge BYS_A=edge BYS_B=edge; fi
cat >"$OUT/logs/params.json" <<EOF
{"scenario": "$SCENARIO", "variant": "$VARIANT", "mode": "$MODE", "t0": $T0, "prometheus_url": "$PROMETHEUS_URL", "out_dir": "$OUT",
 "headline": "$HEADLINE",
 "base_s": $BASE_S, "ramp_s": $RAMP_S, "hold_s": $HOLD_S, "tail_s": $TAIL_S, "duration_s": $DURATION_S,
 "profile": "$PROFILE", "retry": "$RETRY", "base_rate": $BASE_RATE, "peak_rate": $PEAK_RATE,
 "start_replicas": $START_REPLICAS, "max_replicas": $MAX_REPLICAS, "sidecar_maxconn": $SIDECAR_MAXCONN,
 "queue_timeout_s": $QUEUE_TIMEOUT_S, "hold_ms": $HOLD_MS, "cpu_us": $CPU_US, "app_workers": $APP_WORKERS,
 "app_cpu_request": "$APP_CPU_REQUEST", "startup_delay_s": $STARTUP_DELAY, "slow_start_s": $SLOW_START_S, "pod_admits_per_s": $POD_ADMITS,
 "target_utilization": $TARGET_UTILIZATION, "rate_window": "$RATE_WINDOW", "mesh_sync_s": $MESH_SYNC_S,
 "hpa_sync_s": $HPA_SYNC_S, "retry_threshold": $RETRY_THRESHOLD,
 "pool_conns": ${POOL_CONNS:-0}, "lb_flows": ${LB_FLOWS:-0}, "lb_max_utilization": ${LB_MAX_UTILIZATION:-0},
 "bystander_rate": ${BYSTANDER_RATE:-0},
 "retry_share_queries": $([ "$SCENARIO" = retry-storm ] && python3 -c 'import json, sys; print(json.dumps(dict(zip(sys.argv[1::2], sys.argv[2::2]))))' \
   "$ARM_A" "$(retry_share_query "edge-$ARM_A")" "$ARM_B" "$(retry_share_query "edge-$ARM_B")" || echo null),
 "shadow_json": "$OUT/logs/shadow.json", "replicas_log": "$OUT/logs/replicas.log",
 "hpa_log": "$([ "$SCENARIO" = blind-vs-aware ] && echo "$OUT/logs/hpa.log")", "decisions_log": "$OUT/logs/decisions.log",
 "arm_labels": {"$ARM_A": "$LABEL_A", "$ARM_B": "$LABEL_B"},
 "arm_titles": {"$ARM_A": "$TITLE_A", "$ARM_B": "$TITLE_B"},
 "arms": {
  "$ARM_A": {"label": "$LABEL_A", "namespace": "$NS_A", "target": "lab-load-$ARM_A", "autoscaler": "$AUTOSCALER_A",
          "meshscaler": $MESH_A, "events_json": "$OUT/logs/events-$ARM_A.json", "summary": "$OUT/logs/load-$ARM_A.json",
          "lb_proxy": "$LBP_A", "bystander": "lab-bystander-$BYS_A", "bystander_summary": "$OUT/logs/bystander-$BYS_A.json"},
  "$ARM_B": {"label": "$LABEL_B", "namespace": "$NS_B", "target": "lab-load-$ARM_B", "autoscaler": "$AUTOSCALER_B",
          "meshscaler": true, "events_json": "$OUT/logs/events-$ARM_B.json", "summary": "$OUT/logs/load-$ARM_B.json",
          "lb_proxy": "$LBP_B", "bystander": "lab-bystander-$BYS_B", "bystander_summary": "$OUT/logs/bystander-$BYS_B.json"}},
 "timings": {}}
EOF
python3 "$LAB/lib/report.py" "$OUT/logs/params.json" --live 10 &
PROGRESS=$!
PIDS+=("$PROGRESS")

wait "$LOAD_PID_A"; rc_a=$?
wait "$LOAD_PID_B"; rc_b=$?
T_RUN=$((SECONDS - t))
sleep 3 # the last scrapes and watch events
kill "$PROGRESS" 2>/dev/null; wait "$PROGRESS" 2>/dev/null
if [ "$rc_a" -ne 0 ] || [ "$rc_b" -ne 0 ]; then
  say "a load client exited with an error ($rc_a, $rc_b; see $OUT/logs/load-*.err)"
fi
k -n "$NS_SYS" logs "deploy/$REL-meshscaler" >"$OUT/logs/controller.log" 2>&1 || true
k get hpa,mas -A -o wide >"$OUT/logs/autoscalers.txt" 2>&1 || true
[ "$SCENARIO" != blind-vs-aware ] || k -n "$NS_A" get mas shadow -o json >"$OUT/logs/shadow.json" 2>/dev/null || true
# meshscaler's SuccessfulRescale events carry the whole explanation of each scale.
for arm in "$ARM_A" "$ARM_B"; do
  k -n "lab-$arm" get events --field-selector reason=SuccessfulRescale -o json >"$OUT/logs/events-$arm.json" 2>/dev/null || true
done

# --- the report --------------------------------------------------------------------------
python3 - "$OUT/logs/params.json" "$T_BUILD" "$T_UP" "$T_INSTALL" "$T_RUN" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["timings"] = {"build_s": int(sys.argv[2]), "up_s": int(sys.argv[3]), "install_and_warm_s": int(sys.argv[4]),
                "run_s": int(sys.argv[5])}
json.dump(p, open(sys.argv[1], "w"), indent=1)
EOF
python3 "$LAB/lib/report.py" "$OUT/logs/params.json"
rc=$?
REPORTED=1

if ! command -v rsvg-convert >/dev/null 2>&1 && [ "$(id -u)" -eq 0 ]; then
  say "installing librsvg2-bin (rsvg-convert) for the PNG"
  { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends librsvg2-bin \
    || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends librsvg2-bin; }
  } >"$OUT/logs/apt.log" 2>&1 || say "could not install librsvg2-bin: SVG only (log: $OUT/logs/apt.log)"
fi
if command -v rsvg-convert >/dev/null 2>&1; then
  rsvg-convert -f png -o "$OUT/chart.png" "$OUT/chart.svg" || say "rsvg-convert failed: SVG only"
fi
say "timings: build $T_BUILD s, up $T_UP s, install and warm-up $T_INSTALL s, load $T_RUN s"
say "results: $OUT/summary.json, $OUT/chart.svg$( [ -f "$OUT/chart.png" ] && echo ", $OUT/chart.png"); logs in $OUT/logs/"
exit $rc
