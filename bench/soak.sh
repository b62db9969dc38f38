#!/usr/bin/env bash
# bench/soak.sh - a soak: MINUTES of random faults on both sides of two
# leader-electing controllers that scale N Deployments, judged from outside.
#
#   bench/soak.sh [N (200)] [MINUTES (10)]
#
# The environment is e2e/local up --no-node in its own state dir
# ($SOAK_STATE, default /tmp/meshscaler-soak). N paused Deployments (no pods)
# and N MeshAutoscalers in namespaces soak-0, soak-1, ... (100 each): min 1,
# max 20, one user query sum(soak_load{namespace,workload}) with an
# AverageValue target of 10, so the right count is clamp(ceil(load / 10));
# tolerance 0, stabilization windows 0 and policies that never bind, so
# that count is exact at every moment. soak_load is a file this script
# serves (python3 -m http.server) and the environment's Prometheus scrapes
# every second.
#
# Two controllers (a Release build, $MS_SOAK_BUILD, default build-soak) run
# with --leader-elect on Lease soak-system/soak, as the restricted identity of
# manifests/20-rbac.yaml plus the chart's leader-election Role (as
# tests/integration/controller/t_leader.sh grants it). Each reaches the API
# server through its own tests/tools/faultproxy.py; both reach Prometheus
# through a third one.
#
# bench/soak_check.py drives and judges:
#   - the load driver walks each object's load (a step of up to +-50 every
#     10..40 s, 0..250), logging every change with the moment it was published;
#   - the fault driver, for MINUTES, runs one schedule per proxy: latency
#     (100 ms .. 2.5 s), blackhole (ended by reset, 1 s, pass, as
#     t_failover.sh does), reset, trickle (200 .. 20000 B/s), and on the
#     Prometheus side HTTP status 429/503; faults on different proxies overlap.
#     Then every proxy passes and the load stops moving;
#   - a watch of the Deployments (admin credentials, no proxy) records every
#     change of spec.replicas; the API server's audit log records every scale
#     and Lease write with the writer's identity (its user agent).
# Figures:
#   (a) lost writes: Deployments whose spec.replicas is not the count their
#       final load asks for once the system has recovered (must be 0);
#   (b) double writes: scale writes by an identity that was not the last to
#       write the Lease, or more than a lease duration after its last Lease
#       write (t_failover.sh's rule; must be 0);
#   (c) writes against the metrics: a change up (down) when no load of the
#       object in force during the SOAK_TIGHT s before the write asked for
#       more (fewer) replicas than it had (must be 0). SOAK_TIGHT (8 s) is
#       what a healthy path needs: a scrape (1 s) and its ingestion, the
#       round's queries (at most the sync period), the write, and slack. A
#       write whose own API proxy had a fault in those SOAK_TIGHT s may have
#       been held in flight: it gets SOAK_LOOSE s. Writes to a count that no
#       load in that window asked for are listed too;
#   (d) time to recover: from the end of the last fault to every Deployment
#       at its count (and the same again SOAK_STABLE s later).
# Also: controller CPU and RSS, rounds, scale writes, hand-overs.
# Exits 1 when a must-be-0 figure is not 0, when a controller died, or when
# the system never recovered.
#
# Environment: MS_SOAK_BUILD (build dir), SOAK_STATE, SOAK_SYNC (the
# controllers' --sync-period, default 2s), SOAK_SEED (default 1),
# SOAK_TIGHT (8), SOAK_LOOSE (30), SOAK_STABLE (10), SOAK_KEEP=1 (leave the
# environment up and keep the logs; they are kept anyway when a figure fails).
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
N="${1:-200}"
MINUTES="${2:-10}"
build="${MS_SOAK_BUILD:-$root/build-soak}"
SYNC="${SOAK_SYNC:-2s}"
SEED="${SOAK_SEED:-1}"
TIGHT="${SOAK_TIGHT:-8}"
LOOSE="${SOAK_LOOSE:-30}"
STABLE="${SOAK_STABLE:-10}"
MIN=1 MAX=20 TARGET=10 LEASE_NS=soak-system LEASE=soak LEASE_DURATION=15
export MESHSCALER_E2E_STATE="${SOAK_STATE:-/tmp/meshscaler-soak}"
LOCAL="$root/e2e/local"
CHECK="$root/bench/soak_check.py"
work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-soak-work.XXXXXX")"
PIDS=()
FAILED=0

say() { printf '%s\n' "$*"; }
ts() { date +%s.%N; }
since() { python3 -c 'import sys,time; print("%.1f" % (time.time()-float(sys.argv[1])))' "$1"; }

# stop_pid PID : TERM, up to 10 s, then KILL. Only PIDs this script started.
stop_pid() {
  local pid="$1" i
  kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
  kill -TERM "$pid" 2>/dev/null
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

cleanup() {
  local i
  for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[$i]}"; done
  if [ -n "${SOAK_KEEP:-}" ]; then
    say "SOAK_KEEP: the environment stays up ($MESHSCALER_E2E_STATE); logs in $work"
    return
  fi
  "$LOCAL" down >/dev/null 2>&1
  if [ "$FAILED" = 0 ]; then rm -rf "$work"; else say "logs kept in $work"; fi
}
trap cleanup EXIT
trap 'FAILED=1; exit 130' INT TERM

# bg NAME CMD... : start CMD in the background, output in $work/NAME.{out,err}; PID in LAST_PID.
bg() {
  local name="$1"
  shift
  "$@" >"$work/$name.out" 2>"$work/$name.err" </dev/null &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}
free_ports() {
  python3 -c 'import socket, sys
ss = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in ss: s.bind(("127.0.0.1", 0))
print("\n".join(str(s.getsockname()[1]) for s in ss))' "$1"
}

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null &&
  ninja -C "$build" meshscaler >/dev/null || { say "build failed"; exit 1; }
MS="$build/meshscaler"

# --- the environment ------------------------------------------------------------------
say "soak: $N MeshAutoscalers, $MINUTES minutes of faults, sync period $SYNC, seed $SEED (logs: $work)"
t_up=$SECONDS
up_ok=0
for attempt in 1 2 3; do
  "$LOCAL" down >/dev/null 2>&1
  # A port e2e/local chose may be taken by another environment before its
  # server binds it (several run on this machine at once): try again.
  if "$LOCAL" up --no-node >"$work/up.log" 2>&1; then up_ok=1; break; fi
  grep -q 'address already in use' "$work/up.log" || break
done
[ "$up_ok" = 1 ] || { tail -n 20 "$work/up.log"; FAILED=1; exit 1; }
eval "$("$LOCAL" env)"
export KUBECONFIG KUBECTL
k() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
k apply -f "$root/manifests/10-crd.yaml" >/dev/null
k wait --for=condition=Established --timeout=60s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null ||
  { say "CRD not Established"; FAILED=1; exit 1; }
say "  environment up in $((SECONDS - t_up)) s"

# The Lease's namespace, and the chart's leader-election Role for the
# restricted identity there (t_leader.sh's lease_role).
k apply -f - >/dev/null <<YAML || { say "the Lease Role"; FAILED=1; exit 1; }
apiVersion: v1
kind: Namespace
metadata: {name: $LEASE_NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: meshscaler-leader-election, namespace: $LEASE_NS}
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["$LEASE"]
  verbs: ["get", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: meshscaler-leader-election, namespace: $LEASE_NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: meshscaler-leader-election}
subjects: [{kind: ServiceAccount, name: meshscaler, namespace: meshscaler-system}]
YAML

# --- the objects and their load -------------------------------------------------------
python3 - "$N" "$work" "$MIN" "$MAX" "$TARGET" <<'PY'
import sys
n, work, lo, hi, target = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
with open(f"{work}/namespaces.yaml", "w") as f:
    for j in range((n + 99) // 100):
        f.write(f"---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: soak-{j}}}\n")
with open(f"{work}/objects.yaml", "w") as f:
    for i in range(n):
        ns = f"soak-{i // 100}"
        f.write(f"""---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: w{i}, namespace: {ns}}}
spec:
  paused: true
  replicas: 1
  selector: {{matchLabels: {{app: w{i}}}}}
  template:
    metadata: {{labels: {{app: w{i}}}}}
    spec: {{containers: [{{name: app, image: registry.invalid/soak:1}}]}}
---
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {{name: w{i}, namespace: {ns}}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: w{i}}}
  minReplicas: {lo}
  maxReplicas: {hi}
  metrics:
  - name: load
    type: Prometheus
    prometheus: {{query: 'sum(soak_load{{namespace="{{{{namespace}}}}",workload="{{{{name}}}}"}})'}}
    target: {{type: AverageValue, averageValue: "{target}"}}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      tolerance: "0"
      policies: [{{type: Pods, value: 100, periodSeconds: 1}}]
    scaleDown:
      stabilizationWindowSeconds: 0
      tolerance: "0"
      policies: [{{type: Percent, value: 100, periodSeconds: 1}}]
""")
PY
k apply -f "$work/namespaces.yaml" >/dev/null
k create -f "$work/objects.yaml" >"$work/create.out" 2>"$work/create.err"
ndep=$(k get deploy -A --no-headers 2>/dev/null | grep -c '^soak-')
nmas=$(k get mas -A --no-headers 2>/dev/null | grep -c '^soak-')
[ "$ndep" = "$N" ] && [ "$nmas" = "$N" ] || { tail -n 5 "$work/create.err"; say "created $ndep Deployments, $nmas MeshAutoscalers (want $N)"; FAILED=1; exit 1; }

mkdir -p "$work/exporter"
python3 "$CHECK" init "$N" "$work/exporter" "$work/loads.log" --seed "$SEED"
exp_port=$(free_ports 1)
bg exporter python3 -m http.server "$exp_port" --bind 127.0.0.1 --directory "$work/exporter"
for _ in $(seq 1 50); do curl -sf -o /dev/null "http://127.0.0.1:$exp_port/metrics" && break; sleep 0.1; done
"$LOCAL" prometheus targets add soak "127.0.0.1:$exp_port" >/dev/null 2>&1
for _ in $(seq 1 60); do
  curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(soak_load)' | grep -q "\"$N\"" && break
  sleep 1
done
curl -sf "$PROMETHEUS_URL/api/v1/query" --data-urlencode 'query=count(soak_load)' | grep -q "\"$N\"" ||
  { say "Prometheus does not hold the $N series"; FAILED=1; exit 1; }
say "  $N Deployments and MeshAutoscalers; Prometheus scrapes their load"

# --- the proxies -------------------------------------------------------------------------
. "$MESHSCALER_E2E_STATE/ports.env"
declare -A PROXY_PORT=() PROXY_CTL=()
start_proxy() { # NAME UPSTREAM_PORT
  local out="$work/proxy-$1.out" line
  bg "proxy-$1" python3 "$root/tests/tools/faultproxy.py" --listen 127.0.0.1:0 --upstream "127.0.0.1:$2" \
    --control 127.0.0.1:0 --log "$work/proxy-$1.log"
  for _ in $(seq 1 50); do [ -s "$out" ] && break; sleep 0.1; done
  line="$(head -n 1 "$out")"
  PROXY_PORT[$1]="$(sed -n 's/.*LISTEN=\([0-9]*\).*/\1/p' <<<"$line")"
  PROXY_CTL[$1]="$(sed -n 's/.*CONTROL=\([0-9]*\).*/\1/p' <<<"$line")"
  [ -n "${PROXY_PORT[$1]}" ] && [ -n "${PROXY_CTL[$1]}" ] || { say "fault proxy $1 did not start ($line)"; FAILED=1; exit 1; }
}
start_proxy api-c1 "$APISERVER_PORT"
start_proxy api-c2 "$APISERVER_PORT"
start_proxy prom "${PROMETHEUS_URL##*:}"
for c in c1 c2; do
  sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:${PROXY_PORT[api-$c]}#" \
    "$MESHSCALER_E2E_RESTRICTED_KUBECONFIG" >"$work/$c.kubeconfig"
done

# --- the watch, the controllers -----------------------------------------------------------
bg watch python3 "$CHECK" watch "$work/watch.log"
WATCH_PID=$LAST_PID
# The watch's first list must be in before any controller writes.
watched() { [ -f "$work/watch.log" ] && [ "$(wc -l <"$work/watch.log")" -ge "$N" ]; }
for _ in $(seq 1 150); do watched && break; sleep 0.2; done
watched || { say "the watch of the Deployments did not list them"; FAILED=1; exit 1; }

declare -A CTL_PID=() CTL_METRICS=() CTL_ID=()
start_controller() { # NAME
  local attempt
  for attempt in 1 2 3; do
    start_controller_once "$1" && return 0
    # A free port taken by another process before the controller bound it: again.
    grep -q 'cannot listen' "$work/$1.err" || break
  done
  tail -n 5 "$work/$1.err"
  say "controller $1 never got ready"
  FAILED=1
  exit 1
}
start_controller_once() { # NAME
  local mport hport
  { read -r mport; read -r hport; } < <(free_ports 2)
  bg "$1" "$MS" controller --kubeconfig "$work/$1.kubeconfig" --prometheus-url "http://127.0.0.1:${PROXY_PORT[prom]}" \
    --sync-period "$SYNC" --leader-elect --leader-election-id "$LEASE" --leader-election-namespace "$LEASE_NS" \
    --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport" \
    --log-format json --log-level info
  CTL_PID[$1]=$LAST_PID
  CTL_METRICS[$1]=$mport
  CTL_ID[$1]="$(hostname)_$LAST_PID"
  for _ in $(seq 1 300); do
    curl -sf -o /dev/null --max-time 1 "http://127.0.0.1:$hport/readyz" && return 0
    kill -0 "$LAST_PID" 2>/dev/null || break
    sleep 0.2
  done
  stop_pid "$LAST_PID"
  return 1
}
holder() { k get lease -n "$LEASE_NS" "$LEASE" -o 'jsonpath={.spec.holderIdentity}' 2>/dev/null; }
start_controller c1
for _ in $(seq 1 100); do [ -n "$(holder)" ] && break; sleep 0.2; done
start_controller c2
say "  controllers: c1 ${CTL_ID[c1]} (through proxy api-c1), c2 ${CTL_ID[c2]} (api-c2); Lease held by $(holder)"

# --- warm-up: every Deployment at the count of its first load ------------------------------------
t0=$(ts)
r="$(python3 "$CHECK" recover "$work/loads.log" --since "$t0" --deadline 180 --stable 0 --min $MIN --max $MAX --target $TARGET)"
say "  first convergence (no faults): $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(("all %d at their count after %s s" % (int(sys.argv[2]), d["recovered_after"])) if d["recovered_after"] is not None else ("%d never got there: %s" % (d["mismatches"], d["examples"][:3])))' "$r" "$N")"

# --- the soak ------------------------------------------------------------------------------
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat" 2>/dev/null || echo 0; }
declare -A CPU0=()
for c in c1 c2; do CPU0[$c]=$(cpu_ticks "${CTL_PID[$c]}"); done
t_soak=$(ts)
bg load python3 "$CHECK" load "$N" "$work/exporter" "$work/loads.log" --seed "$((SEED + 1))"
LOAD_PID=$LAST_PID
bg faults python3 "$CHECK" faults --seconds "$((MINUTES * 60))" --seed "$((SEED + 2))" \
  --proxy "api-c1=api:${PROXY_CTL[api-c1]}" --proxy "api-c2=api:${PROXY_CTL[api-c2]}" \
  --proxy "prom=prom:${PROXY_CTL[prom]}" --stop-pid "$LOAD_PID" "$work/faults.log"
FAULTS_PID=$LAST_PID
ctl_metric() { # NAME FAMILY : the sum of a family's samples
  curl -sf --max-time 3 "http://127.0.0.1:${CTL_METRICS[$1]}/metrics" 2>/dev/null |
    awk -v n="$2" '$1 == n || index($1, n "{") == 1 {s += $NF} END {print s + 0}'
}
say "  faults for $MINUTES min (one line a minute: Lease holder, faults ended so far, scale writes of c1 and c2)"
minute=0
while kill -0 "$FAULTS_PID" 2>/dev/null; do
  sleep 1
  if (( $(printf '%.0f' "$(since "$t_soak")") >= (minute + 1) * 60 )); then
    minute=$((minute + 1))
    h="$(holder)"
    for c in c1 c2; do [ "$h" = "${CTL_ID[$c]}" ] && h=$c; done
    say "    $minute min: holder ${h:-none}, $(wc -l <"$work/faults.log") faults, writes c1 $(ctl_metric c1 meshscaler_scales_total) c2 $(ctl_metric c2 meshscaler_scales_total)"
  fi
done
wait "$FAULTS_PID"
last_fault="$(tail -n 1 "$work/faults.out")"
stop_pid "$LOAD_PID"
[ -n "$last_fault" ] || { say "the fault driver failed: $(tail -n 3 "$work/faults.err")"; FAILED=1; exit 1; }
load_stop="$(awk '$3 == "stop" {print $1}' "$work/loads.log")"
say "  faults over: every proxy passes; the load stopped moving $(python3 -c 'import sys; print("%.1f" % (float(sys.argv[1] or 0)-float(sys.argv[2])))' "$load_stop" "$last_fault") s after the last fault ended"

# --- recovery ------------------------------------------------------------------------------
rec="$(python3 "$CHECK" recover "$work/loads.log" --since "$last_fault" --deadline 300 --stable "$STABLE" --min $MIN --max $MAX --target $TARGET)"
sleep 2
stop_pid "$WATCH_PID"

# --- the controllers' own figures --------------------------------------------------------
declare -A ALIVE=()
for c in c1 c2; do
  if kill -0 "${CTL_PID[$c]}" 2>/dev/null; then ALIVE[$c]=1; else ALIVE[$c]=0; FAILED=1; fi
done
soak_secs=$(since "$t_soak")
say ""
say "controllers over the soak ($soak_secs s, sync period $SYNC; the machine has $(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg)):"
for c in c1 c2; do
  pid=${CTL_PID[$c]}
  if [ "${ALIVE[$c]}" = 1 ]; then
    python3 - "$c" "${CTL_ID[$c]}" "$(( $(cpu_ticks "$pid") - ${CPU0[$c]} ))" "$soak_secs" \
      "$(awk '/^VmRSS/ {r = $2} /^VmHWM/ {h = $2} END {printf "%.1f %.1f", r / 1024, h / 1024}' "/proc/$pid/status")" \
      "$(ctl_metric "$c" meshscaler_round_duration_seconds_count)" "$(ctl_metric "$c" meshscaler_scales_total)" \
      "$(ctl_metric "$c" meshscaler_decisions_total)" "$(ctl_metric "$c" meshscaler_writes_dropped_total)" \
      "$(ctl_metric "$c" meshscaler_leader)" <<'PY'
import sys
c, ident, ticks, secs, rss, rounds, scales, decisions, dropped, leader = sys.argv[1:]
cpu = int(ticks) / 100
r, h = rss.split()
print(f"  {c} ({ident}): CPU {cpu:.1f} s ({100 * cpu / float(secs):.1f}% of a core), RSS {r} MiB (peak {h} MiB), "
      f"{float(rounds):.0f} rounds, {float(decisions):.0f} decisions, {float(scales):.0f} scale writes, "
      f"{float(dropped):.0f} writes dropped (lease not valid long enough), leader now {float(leader):.0f}")
PY
  else
    say "  $c (${CTL_ID[$c]}): DIED during the soak; stderr tail: $(tail -n 3 "$work/$c.err" | tr '\n' ' ' | cut -c1-400)"
  fi
done

python3 - "$work/c1.err" "$work/c2.err" <<'PY'
import collections, json, sys
for name, path in zip(("c1", "c2"), sys.argv[1:]):
    n = collections.Counter()
    for line in open(path, errors="replace"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("level") in ("warn", "error") or e.get("msg") in ("became leader", "scale changed by someone else; not overwriting"):
            n[f'{e.get("level")} "{e.get("msg")}"'] += 1
    print(f"  {name} log: " + ("; ".join(f"{m} x{c}" for m, c in n.most_common(8)) or "nothing above info"))
PY

# --- the judge ----------------------------------------------------------------------------
sleep 1
say ""
say "judged from outside (audit log, the watch, the recorded load):"
python3 "$CHECK" check --loads "$work/loads.log" --watch "$work/watch.log" --audit "$MESHSCALER_E2E_STATE/logs/audit.log" \
  --faults "$work/faults.log" --lease-ns "$LEASE_NS" --lease-name "$LEASE" --duration "$LEASE_DURATION" \
  --tight "$TIGHT" --loose "$LOOSE" --min $MIN --max $MAX --target $TARGET \
  --identity-proxy "${CTL_ID[c1]}=api-c1" --identity-proxy "${CTL_ID[c2]}=api-c2" >"$work/check.out" 2>"$work/check.err" ||
  { cat "$work/check.err"; FAILED=1; }
grep -v '^FIGURES ' "$work/check.out"
figures="$(sed -n 's/^FIGURES //p' "$work/check.out")"
python3 - "$work/faults.log" <<'PY'
import json, sys, collections
fs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
by = collections.Counter((f["proxy"], f["mode"]) for f in fs)
secs = collections.Counter()
for f in fs:
    secs[f["proxy"]] += f["end"] - f["start"]
print(f"  faults: {len(fs)}; " + "; ".join(
    f"{p} {secs[p]:.0f} s faulted (" + ", ".join(f"{m} {n}" for (pp, m), n in sorted(by.items()) if pp == p) + ")"
    for p in sorted(secs)))
PY

# --- the figures ---------------------------------------------------------------------------
say ""
verdict="$(python3 - "$rec" "${figures:-{\}}" "$N" <<'PY'
import json, sys
rec, fig, n = json.loads(sys.argv[1]), json.loads(sys.argv[2]), int(sys.argv[3])
lost = rec["mismatches"]
dbl = fig.get("double_writes", "?")
against = fig.get("against_metrics", "?")
rt = rec["recovered_after"]
print(f"scale writes lost (Deployments not at their count after recovery): {lost}  (must be 0)")
print(f"double writes (outside the writer's lease term):                   {dbl}  (must be 0)")
print(f"decisions that moved against the metrics:                          {against}  (must be 0)")
print(f"time to recover after the last fault:                              "
      + (f"{rt} s" if rt is not None else "never (within 300 s)"))
tr = rec.get("trace", [])
if tr:
    print("  Deployments not at their count, by seconds after the last fault: "
          + ", ".join(f"{n} at {t} s" for t, n in (tr if len(tr) <= 12 else tr[:6] + tr[-6:])))
print(f"scale writes: {fig.get('audited_scale_writes', '?')} audited, {fig.get('replica_changes', '?')} replica changes watched; "
      f"Lease hand-overs: {fig.get('handovers', '?')}")
for e in rec["examples"]:
    print(f"  not at its count: {e}")
ok = lost == 0 and dbl == 0 and against == 0 and rt is not None
print("VERDICT " + ("ok" if ok else "FAIL"))
PY
)"
grep -v '^VERDICT' <<<"$verdict"
for c in c1 c2; do [ "${ALIVE[$c]}" = 1 ] || say "controller $c died during the soak"; done
if [[ "$verdict" != *"VERDICT ok"* ]]; then FAILED=1; fi
if [ "$FAILED" != 0 ]; then say "SOAK FAILED"; exit 1; fi
say "soak passed"
