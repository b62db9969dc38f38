# lib.sh - the harness of the controller's end-to-end tests: checks and their
# tally, the exporter whose series Prometheus scrapes, live controllers started
# and stopped by PID, and small kubectl helpers. Sourced by run.sh and by
# ../parity/run.sh.
#
# Everything listens on 127.0.0.1 at free ports. Every process started here is
# remembered in E2E_PIDS and stopped by PID (e2e_stop_all, from run.sh's trap).
# Needs: KUBECTL, KUBECONFIG, PROMETHEUS_URL, PROMETHEUS_TARGETS_DIR,
# MESHSCALER_E2E_STATE, MESHSCALER_E2E_RESTRICTED_KUBECONFIG, MS (the binary),
# WORK (a scratch directory); use_environment and find_binary set all but WORK
# (they need root, E2E_LOCAL and an abort function).

E2E_PIDS=()
passed=0
failed=0

# --- the environment and the binary (run.sh here and in ../parity) ----------------

# use_environment [UP_FLAG]... : the e2e/local environment named by KUBECONFIG,
# PROMETHEUS_URL and MESHSCALER_E2E_STATE when they are set (scripts/test.sh, or
# after eval "$(e2e/local env)"), left up; otherwise `e2e/local up UP_FLAG...` in
# $WORK/e2e-state, with OWN_ENV=1 (the caller's cleanup takes it down). Exports
# what the helpers here read.
use_environment() {
  OWN_ENV=0
  if [[ -n "${KUBECONFIG:-}" && -n "${PROMETHEUS_URL:-}" && -n "${MESHSCALER_E2E_STATE:-}" ]]; then
    : "${KUBECTL:=$root/e2e/.bin/kubectl}"
    : "${PROMETHEUS_TARGETS_DIR:=$MESHSCALER_E2E_STATE/prometheus/targets}"
    : "${MESHSCALER_E2E_RESTRICTED_KUBECONFIG:=$MESHSCALER_E2E_STATE/restricted.kubeconfig}"
  else
    OWN_ENV=1
    export MESHSCALER_E2E_STATE="$WORK/e2e-state"
    "$E2E_LOCAL" up "$@" >"$WORK/e2e-up.log" 2>&1 || { tail -n 20 "$WORK/e2e-up.log"; abort "e2e/local up $*"; }
    eval "$("$E2E_LOCAL" env)"
  fi
  export KUBECONFIG KUBECTL PROMETHEUS_URL MESHSCALER_E2E_STATE MESHSCALER_E2E_RESTRICTED_KUBECONFIG
}

# find_binary : MS, the meshscaler binary: $MS_BUILD_DIR/meshscaler, else
# $MS_IT_BUILD/meshscaler (scripts/test.sh), else build-ctl-e2e (Sanitize) at
# the top of the repo, built here; brought up to date when it is a Ninja tree.
find_binary() {
  local build
  if [[ -n "${MS_BUILD_DIR:-}" ]]; then
    build="$MS_BUILD_DIR"
  elif [[ -n "${MS_IT_BUILD:-}" ]]; then
    build="$MS_IT_BUILD"
    [[ "$build" == /* ]] || build="$root/$build"
  else
    build="$root/build-ctl-e2e"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize >"$WORK/cmake.log" 2>&1 ||
      { tail -n 20 "$WORK/cmake.log"; abort "cmake"; }
  fi
  if [[ -f "$build/build.ninja" ]]; then
    ninja -C "$build" meshscaler >"$WORK/build.log" 2>&1 || { tail -n 30 "$WORK/build.log"; abort "build meshscaler"; }
  fi
  MS="$build/meshscaler"
  [[ -x "$MS" ]] || abort "no binary at $MS"
}

# --- checks: one line each -----------------------------------------------------

ok() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }
# check WHAT CMD... : ok when CMD succeeds.
check() {
  local what="$1"
  shift
  if "$@"; then ok "$what"; else fail "$what"; fi
}
note() { echo "     $*"; }
now() { date +%s.%N; }
# elapsed SINCE : seconds since SINCE (from now), one decimal.
elapsed() { python3 -c 'import sys,time; print("%.1f" % (time.time()-float(sys.argv[1])))' "$1"; }
# fle A B : A <= B for decimals.
fle() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[2]) else 1)' "$1" "$2"; }
# flt A B : A < B for decimals.
flt() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)' "$1" "$2"; }

# --- processes ------------------------------------------------------------------

# free_ports N : N distinct free TCP ports on 127.0.0.1, one per line (all
# held open together while chosen, so two calls in a row cannot collide).
free_ports() {
  python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in ss))' "$1"
}
free_port() { free_ports 1; }

# bg OUT ERR CMD... : start CMD in the background; PID in LAST_PID. Never in $(...).
bg() {
  local out="$1" err="$2"
  shift 2
  "$@" >"$out" 2>"$err" </dev/null &
  LAST_PID=$!
  E2E_PIDS+=("$LAST_PID")
}

# stop_pid PID [SIGNAL [STACKS_FILE]] : signal (TERM by default), wait up to
# 12 s, then KILL (first dumping every thread's stack to STACKS_FILE with gdb,
# when given and gdb exists). Sets STOP_RC to the exit status, or "timeout".
# Only PIDs this harness started.
stop_pid() {
  local pid="$1" sig="${2:-TERM}" stacks="${3:-}" i
  STOP_RC=
  if ! kill -0 "$pid" 2>/dev/null; then
    wait "$pid" 2>/dev/null
    STOP_RC=$?
    return 0
  fi
  kill "-$sig" "$pid" 2>/dev/null
  for i in $(seq 1 120); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    if [[ -n "$stacks" ]] && command -v gdb >/dev/null; then
      gdb -p "$pid" -batch -ex 'thread apply all bt' >"$stacks" 2>&1
    fi
    kill -KILL "$pid" 2>/dev/null
    STOP_RC=timeout
  fi
  { wait "$pid"; } 2>/dev/null
  local rc=$?
  [[ -n "$STOP_RC" ]] || STOP_RC=$rc
  return 0
}

e2e_stop_all() {
  local pid
  for pid in "${E2E_PIDS[@]}"; do stop_pid "$pid"; done
  E2E_PIDS=()
}

# --- the exporter -----------------------------------------------------------------
# A static exposition file served by python3 -m http.server, scraped by the
# environment's Prometheus as target "$EXPORTER_TARGET". Tests set series with
# series_set and publish them with publish (atomic rename); PUBLISHED_AT is
# the moment of the rename.

declare -A SERIES=()
EXPORTER_DIR=
EXPORTER_TARGET=

exporter_start() {
  EXPORTER_DIR="$WORK/exporter"
  mkdir -p "$EXPORTER_DIR"
  EXPORTER_TARGET="mse2e-ctl-$$"
  local port
  port=$(free_port)
  publish
  bg "$WORK/exporter.log" "$WORK/exporter.log" python3 -m http.server "$port" --bind 127.0.0.1 --directory "$EXPORTER_DIR"
  EXPORTER_PID=$LAST_PID
  local i
  for i in $(seq 1 50); do
    curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" && break
    sleep 0.1
  done
  "$E2E_LOCAL" prometheus targets add "$EXPORTER_TARGET" "127.0.0.1:$port" >/dev/null 2>&1 || return 1
  prom_wait "up{target=\"$EXPORTER_TARGET\"} == 1" 30
}

exporter_stop() {
  [[ -n "$EXPORTER_TARGET" ]] && "$E2E_LOCAL" prometheus targets rm "$EXPORTER_TARGET" >/dev/null 2>&1
  [[ -n "${EXPORTER_PID:-}" ]] && stop_pid "$EXPORTER_PID"
}

# series_set NAME NAMESPACE WORKLOAD VALUE : stage one series (publish to serve it).
series_set() { SERIES["$1{namespace=\"$2\",workload=\"$3\"}"]="$4"; }

publish() {
  local f="$EXPORTER_DIR/metrics" k
  {
    echo "# exposition of the meshscaler controller e2e tests"
    for k in "${!SERIES[@]}"; do echo "$k ${SERIES[$k]}"; done
  } >"$f.tmp"
  PUBLISHED_AT=$(now)
  mv -f "$f.tmp" "$f"
}

# set_and_wait NAME NAMESPACE WORKLOAD VALUE : publish and wait until
# Prometheus answers the new value (at most 15 s).
set_and_wait() {
  series_set "$@"
  publish
  prom_wait "$1{namespace=\"$2\",workload=\"$3\"} == $4" 15
}

# --- Prometheus -------------------------------------------------------------------

# prom_query QUERY : the raw JSON answer.
prom_query() { curl -sf --max-time 2 "$PROMETHEUS_URL/api/v1/query" --data-urlencode "query=$1"; }

# prom_wait QUERY SECONDS : until QUERY returns a non-empty vector.
prom_wait() {
  local q="$1" deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    [[ "$(prom_query "$q" 2>/dev/null)" == *'"value"'* ]] && return 0
    sleep 0.2
  done
  echo "     (Prometheus never answered: $q)"
  return 1
}

PROM_CMDLINE=()
prom_pidfile() { echo "$MESHSCALER_E2E_STATE/pids/prometheus.pid"; }

# prom_stop : stop the environment's Prometheus by the PID in its state dir,
# remembering its command line for prom_restart.
prom_stop() {
  local pid
  pid="$(cat "$(prom_pidfile)")" || return 1
  mapfile -d '' PROM_CMDLINE <"/proc/$pid/cmdline" || return 1
  kill -TERM "$pid" || return 1
  PROM_STOPPED=1
  local i
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# prom_restart : start Prometheus again exactly as e2e/local started it (same
# arguments, data and port) and record its PID where e2e/local looks for it,
# so `e2e/local down` stops it.
prom_restart() {
  [[ ${#PROM_CMDLINE[@]} -gt 0 ]] || return 1
  "${PROM_CMDLINE[@]}" >>"$MESHSCALER_E2E_STATE/logs/prometheus.log" 2>&1 </dev/null &
  echo $! >"$(prom_pidfile)"
  disown $! 2>/dev/null
  PROM_STOPPED=0
  local i
  for i in $(seq 1 150); do
    curl -sf -o /dev/null --max-time 1 "$PROMETHEUS_URL/-/ready" && return 0
    sleep 0.2
  done
  return 1
}

# --- Kubernetes -------------------------------------------------------------------

k() { "$KUBECTL" "$@"; }

# new_ns PREFIX : create a namespace of its own, named in NS (a deleted one
# lingers while it terminates, so each run has fresh names).
CREATED_NS=()
new_ns() {
  NS="mse2e-$1-$$"
  k create namespace "$NS" >/dev/null || return 1
  CREATED_NS+=("$NS")
}

# deployment NS NAME REPLICAS : a Deployment whose Pods stay Pending. The local
# cluster has a real node now, but these tests need exact control of the replica
# and ready counts the controller sees (a pod that really starts, or fails to pull,
# would move them): the pods name a scheduler that does not exist, so none is ever
# placed. tests/incluster/ runs the controller against pods that really run.
deployment() {
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $2, labels: {app: $2}}
spec:
  replicas: $3
  selector: {matchLabels: {app: $2}}
  template:
    metadata: {labels: {app: $2}}
    spec:
      schedulerName: meshscaler-e2e-unscheduled
      containers: [{name: app, image: registry.invalid/mse2e:1}]
YAML
}

# npods NS APP : how many pods labelled app=APP exist (a Deployment's, above).
npods() { k get pods -n "$1" -l "app=$2" -o name 2>/dev/null | wc -l | tr -d ' '; }
is_npods() { [[ "$(npods "$1" "$2")" == "$3" ]]; }
# pod_names NS APP : their names, one a line.
pod_names() { k get pods -n "$1" -l "app=$2" -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}'; }

# jget NS RESOURCE NAME JSONPATH
jget() { k get -n "$1" "$2" "$3" -o "jsonpath=$4" 2>/dev/null; }
replicas() { jget "$1" deployment "$2" '{.spec.replicas}'; }
generation() { jget "$1" deployment "$2" '{.metadata.generation}'; }
rv() { jget "$1" "$2" "$3" '{.metadata.resourceVersion}'; }
mas_reason() { jget "$1" mas "$2" '{.status.lastDecision.reason}'; }
mas_desired() { jget "$1" mas "$2" '{.status.lastDecision.desired}'; }
mas_cond() { # NS NAME TYPE -> "STATUS REASON"
  jget "$1" mas "$2" "{range .status.conditions[?(@.type==\"$3\")]}{.status} {.reason}{end}"
}
mas_status_json() { jget "$1" mas "$2" '{.status}'; }

# wait_for SECONDS CMD... : poll CMD every 0.2 s.
wait_for() {
  local deadline
  deadline=$(python3 -c 'import sys,time; print(time.time()+float(sys.argv[1]))' "$1")
  shift
  while :; do
    "$@" && return 0
    fle "$deadline" "$(now)" && return 1
    sleep 0.2
  done
}
is_replicas() { [[ "$(replicas "$1" "$2")" == "$3" ]]; }
is_replicas_at_least() { local r; r="$(replicas "$1" "$2")"; [[ -n "$r" && "$r" -ge "$3" ]]; }
is_reason() { [[ "$(mas_reason "$1" "$2")" == "$3" ]]; }
has_decision() { [[ -n "$(mas_reason "$1" "$2")" ]]; }
cond_is() { [[ "$(mas_cond "$1" "$2" "$3")" == "$4"* ]]; }
# hpa_to NAME MIN MAX : an autoscaling/v2 HPA on Deployment NAME, on CPU at 50%
# (with no metrics server it acts only on its min and max).
hpa_to() {
  cat <<YAML
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $1}
  minReplicas: $2
  maxReplicas: $3
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 50}}
YAML
}

# hpa_compared NS NAME N : status.hpaComparison names an HPA that wants N, compared at least once.
hpa_compared() {
  [[ "$(jget "$1" mas "$2" '{.status.hpaComparison.hpaDesiredReplicas}')" == "$3" &&
     "$(jget "$1" mas "$2" '{.status.hpaComparison.syncs}')" -ge 1 ]] 2>/dev/null
}

# hold SECONDS NS DEPLOY REPLICAS : the Deployment keeps REPLICAS the whole time.
# On a change, HOLD_SEEN says what and when.
hold() {
  local end
  end=$(python3 -c 'import sys,time; print(time.time()+float(sys.argv[1]))' "$1")
  local t0 r
  t0=$(now)
  HOLD_SEEN=
  while ! fle "$end" "$(now)"; do
    r="$(replicas "$2" "$3")"
    # (an empty answer is a failed kubectl call, not a change)
    if [[ -n "$r" && "$r" != "$4" ]]; then
      HOLD_SEEN="replicas $r after $(elapsed "$t0") s"
      return 1
    fi
    sleep 0.2
  done
  return 0
}

# settle_rv NS RESOURCE NAME : wait until the resourceVersion is stable for 3 s
# (the Deployment controller writes status after a change).
settle_rv() {
  local last cur stable=0 i
  last="$(rv "$1" "$2" "$3")"
  for i in $(seq 1 100); do
    sleep 0.3
    cur="$(rv "$1" "$2" "$3")"
    if [[ "$cur" == "$last" ]]; then
      stable=$((stable + 1))
      ((stable >= 10)) && return 0
    else
      stable=0
      last="$cur"
    fi
  done
  return 1
}

# events_for NS NAME : "TYPE REASON" of each Event about the MeshAutoscaler NAME.
events_for() {
  k get events -n "$1" --field-selector "involvedObject.name=$2,involvedObject.kind=MeshAutoscaler" \
    -o 'jsonpath={range .items[*]}{.type} {.reason}{"\n"}{end}' 2>/dev/null
  k get events.v1.events.k8s.io -n "$1" --field-selector "regarding.name=$2,regarding.kind=MeshAutoscaler" \
    -o 'jsonpath={range .items[*]}{.type} {.reason}{"\n"}{end}' 2>/dev/null
}

# has_event NS NAME REGEX : an Event about MeshAutoscaler NAME matches REGEX
# ("TYPE REASON"); EVENT_SEEN is the first match. (No `| grep -q`: with
# pipefail an early exit of grep fails the pipeline.)
has_event() {
  local all
  all="$(events_for "$1" "$2")"
  EVENT_SEEN="$(grep -E "$3" <<<"$all" | head -n 1)"
  [[ -n "$EVENT_SEEN" ]]
}

# --- controllers ------------------------------------------------------------------
# ctl_start NAME KUBECONFIG [FLAGS...] : a live controller; its stdout, stderr,
# PID and ports in CTL_OUT[NAME] CTL_ERR[NAME] CTL_PID[NAME] CTL_METRICS[NAME]
# CTL_HEALTH[NAME]. Waits for /readyz (30 s); returns 1 when it never gets ready.

declare -A CTL_PID=() CTL_OUT=() CTL_ERR=() CTL_METRICS=() CTL_HEALTH=()

ctl_start() {
  local name="$1" kc="$2"
  shift 2
  local mport hport
  { read -r mport; read -r hport; } < <(free_ports 2)
  local base="$WORK/${CURRENT_TEST:-t}-$name"
  CTL_OUT[$name]="$base.out"
  CTL_ERR[$name]="$base.err"
  CTL_METRICS[$name]=$mport
  CTL_HEALTH[$name]=$hport
  echo "$MS controller --kubeconfig $kc --prometheus-url $PROMETHEUS_URL --metrics-bind-address 127.0.0.1:$mport --health-probe-bind-address 127.0.0.1:$hport --log-format json --log-level ${MS_E2E_LOG_LEVEL:-info} $*" >"$base.cmd"
  bg "${CTL_OUT[$name]}" "${CTL_ERR[$name]}" "$MS" controller --kubeconfig "$kc" \
    --prometheus-url "$PROMETHEUS_URL" \
    --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport" \
    --log-format json --log-level "${MS_E2E_LOG_LEVEL:-info}" "$@"
  CTL_PID[$name]=$LAST_PID
  local i
  for i in $(seq 1 150); do
    curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$hport/readyz" && return 0
    kill -0 "${CTL_PID[$name]}" 2>/dev/null || break
    sleep 0.2
  done
  note "controller $name not ready; stderr tail:"
  tail -n 5 "${CTL_ERR[$name]}" | sed 's/^/       /'
  return 1
}

ctl_metrics() { curl -sf --max-time 2 "http://127.0.0.1:${CTL_METRICS[$1]}/metrics"; }

# sanitizer_clean FILE : no ASan/UBSan/LSan report in FILE.
sanitizer_clean() { ! grep -qE 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY: (Address|Undefined|Leak)' "$1"; }

# ctl_stop NAME [SIGNAL] : stop it; with TERM (the default) also check it
# exits 0 within the deadline and that the sanitizers stayed quiet.
ctl_stop() {
  local name="$1" sig="${2:-TERM}"
  [[ -n "${CTL_PID[$name]:-}" ]] || return 0
  # (stderr: bash reports a job killed by a signal once it reaps it)
  stop_pid "${CTL_PID[$name]}" "$sig" "${CTL_ERR[$name]%.err}.stacks" 2>/dev/null
  unset "CTL_PID[$name]"
  if [[ "$sig" == TERM ]]; then
    if [[ "$STOP_RC" == 0 ]]; then ok "controller $name exits 0 on SIGTERM"
    else fail "controller $name on SIGTERM: exit $STOP_RC (stderr tail: $(tail -n 2 "${CTL_ERR[$name]}" | tr '\n' ' ' | cut -c1-300); logs ${CTL_ERR[$name]%.err}.*)"; fi
  fi
  if sanitizer_clean "${CTL_ERR[$name]}"; then :; else
    fail "controller $name: sanitizer report in ${CTL_ERR[$name]}: $(grep -m1 -E 'ERROR: |runtime error:' "${CTL_ERR[$name]}" | cut -c1-200)"
  fi
}

ctl_stop_all() {
  local name
  for name in "${!CTL_PID[@]}"; do ctl_stop "$name"; done
}
