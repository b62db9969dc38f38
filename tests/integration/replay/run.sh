#!/usr/bin/env bash
# `meshscaler replay` against a real Prometheus holding known history: the
# series are written as OpenMetrics, backfilled with promtool into a fresh
# TSDB, and served by a Prometheus (Debian 2.42) this script starts and stops.
#
# The history: a Deployment shop/web of 2 pods (kube_deployment_spec_replicas
# 2 all along: the HPA of the incident never moved) whose HAProxy sidecars
# (limit 100 sessions each) hold 30 sessions for 10 minutes, 90 for 20
# minutes, then 20 for 10 minutes; and a user series lab_rps (the total
# request rate) 100, then 330, then 80.
#
# Checks: the decisions equal `meshscaler decide` on the scenario the replay
# exports (-o scenario); the known shape (first scale-up at the step the
# load rose, 3 replicas under load by both metrics, nothing above target at
# meshscaler's count afterwards); the summary; the SVG is well-formed.
# Build: $MS_IT_BUILD (default build-it). Ends with "N passed, N failed".
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${MS_IT_BUILD:-build-it}"
[[ "$build" = /* ]] || build="$root/$build"
ms="$build/meshscaler"
# shellcheck source-path=SCRIPTDIR source=../prom/lib.sh
source "$root/tests/integration/prom/lib.sh"

# pass, fail, check, eventually
# shellcheck source-path=SCRIPTDIR source=../../lib/check.sh
. "$root/tests/lib/check.sh"

if [[ ! -x "$ms" ]]; then
  echo "replay: no meshscaler at $ms"; echo "0 passed, 1 failed"; exit 1
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-it-replay.XXXXXX")"
cleanup() { it_stop_all; [[ "${MS_IT_KEEP:-0}" == 1 ]] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- the history: 40 minutes at 15 s, ending 20 minutes ago, minute-aligned
now=$(date +%s)
start=$(( (now - 3600) / 60 * 60 ))
end=$((start + 2400))
python3 - "$start" > "$work/history.om" <<'PYEOF'
import sys
start = int(sys.argv[1])
pods = ["web-5d9c7b6f8d-abcd0", "web-5d9c7b6f8d-abcd1"]
def phase(t):
    m = (t - start) // 60
    return 0 if m < 10 else 1 if m < 30 else 2
sessions = [30, 90, 20]
rps = [100, 330, 80]
print("# TYPE haproxy_server_current_sessions gauge")
for p in pods:
    for t in range(start, start + 2400 + 1, 15):
        print(f'haproxy_server_current_sessions{{namespace="shop",pod="{p}",proxy="app",server="app"}} {sessions[phase(t)]} {t}')
print("# TYPE haproxy_server_limit_sessions gauge")
for p in pods:
    for t in range(start, start + 2400 + 1, 15):
        print(f'haproxy_server_limit_sessions{{namespace="shop",pod="{p}",proxy="app",server="app"}} 100 {t}')
print("# TYPE lab_rps gauge")
for t in range(start, start + 2400 + 1, 15):
    print(f'lab_rps{{namespace="shop"}} {rps[phase(t)]} {t}')
print("# TYPE kube_deployment_spec_replicas gauge")
for t in range(start, start + 2400 + 1, 15):
    print(f'kube_deployment_spec_replicas{{namespace="shop",deployment="web"}} 2 {t}')
print("# EOF")
PYEOF
mkdir -p "$work/data"
if promtool tsdb create-blocks-from openmetrics "$work/history.om" "$work/data" >"$work/backfill.log" 2>&1; then
  pass "promtool backfilled $(grep -c ' [0-9]*$' "$work/history.om") samples"
else
  fail "promtool backfill: $(tail -3 "$work/backfill.log")"; echo "$passed passed, $failed failed"; exit 1
fi
port=$(it_port)
cat > "$work/prometheus.yml" <<EOF
global: {scrape_interval: 15s}
scrape_configs: []
EOF
it_start "$work/prometheus.log" prometheus --config.file="$work/prometheus.yml" \
  --storage.tsdb.path="$work/data" --storage.tsdb.retention.time=3650d \
  --web.listen-address="127.0.0.1:$port" --log.level=warn
if ! it_wait_http "http://127.0.0.1:$port/-/ready" 30; then
  fail "prometheus did not start: $(tail -5 "$work/prometheus.log")"; echo "$passed passed, $failed failed"; exit 1
fi

cat > "$work/mas.yaml" <<'EOF'
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 10
  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: Utilization, averageUtilization: 60}
  - name: rps
    type: Prometheus
    prometheus: {query: 'sum(lab_rps{namespace="{{namespace}}"})'}
    target: {type: AverageValue, averageValue: "120"}
EOF
from=$((start + 60)); to=$((end - 60))
args=(replay -f "$work/mas.yaml" --prometheus-url "http://127.0.0.1:$port" --from "$from" --to "$to" --step 15s
      --chunk-steps 60)
# A chunk of 60 steps: the 153 steps are read in three chunks (progress lines).
if "$ms" "${args[@]}" -o json --svg "$work/chart.svg" >"$work/replay.jsonl" 2>"$work/replay.err"; then
  pass "replay -o json ran ($(($(wc -l < "$work/replay.jsonl") - 1)) steps)"
else
  fail "replay -o json: $(tail -3 "$work/replay.err")"
fi
"$ms" "${args[@]}" -o scenario >"$work/scenario.json" 2>/dev/null || fail "replay -o scenario"
"$ms" "${args[@]}" -o table >"$work/table.txt" 2>/dev/null || fail "replay -o table"
"$ms" decide -f "$work/scenario.json" >"$work/decide.jsonl" 2>"$work/decide.err" ||
  fail "decide refused the exported scenario: $(cat "$work/decide.err")"

py_out="$(python3 - "$work" "$start" <<'PYEOF'
import json, sys, xml.etree.ElementTree as ET
work, start = sys.argv[1], int(sys.argv[2])
ok = fail = 0
def check(name, cond, detail=""):
    global ok, fail
    if cond: ok += 1; print("ok   " + name)
    else: fail += 1; print("FAIL " + name + (": " + str(detail) if detail else ""))
lines = [json.loads(l) for l in open(f"{work}/replay.jsonl")]
summary = lines[-1]["summary"]; steps = lines[:-1]
decide = [json.loads(l) for l in open(f"{work}/decide.jsonl")]
check("every step has a decision", len(steps) == summary["steps"] == 153, (len(steps), summary["steps"]))
check("decide on the exported scenario decides the same at every step",
      [s["desiredReplicas"] for s in steps] == [d["desiredReplicas"] for d in decide],
      next(((s["time"], s["desiredReplicas"], d["desiredReplicas"]) for s, d in zip(steps, decide)
            if s["desiredReplicas"] != d["desiredReplicas"]), None))
rise = start + 600
first_up = next((s["time"] for s in steps if s["desiredReplicas"] > s["currentReplicas"]), None)
check("the first scale-up is the step the load rose (%d)" % rise, first_up == rise, first_up)
check("the summary names it", summary["firstScaleUp"] == rise, summary["firstScaleUp"])
under = [s for s in steps if rise + 60 <= s["time"] < start + 1800]
check("3 replicas under load (90% of 2 pods' sessions spread over 3: 60%; 330 rps / 120 each)",
      under and all(s["desiredReplicas"] == 3 for s in under),
      sorted({s["desiredReplicas"] for s in under}))
sidecar = under[-1]["metrics"]["sidecar"] if under else {}
check("the sidecar reading is spread over meshscaler's 3 pods (90 x 2 / 3 = 60)",
      abs(sidecar.get("value", 0) - 60) < 1e-9, sidecar)
check("the actual count is read from kube-state-metrics (2 all along)",
      all(s["actualReplicas"] == 2 for s in steps) and summary["actualChanges"] == 0)
check("the target (2 pods at 90%) spent the 20 minutes above target, meshscaler 1 step",
      summary["actualAboveTargetSeconds"] == 1200 and summary["aboveTargetSeconds"] == 15,
      (summary["actualAboveTargetSeconds"], summary["aboveTargetSeconds"]))
check("replica-seconds: meshscaler more under load, the minimum otherwise",
      summary["replicaSecondsWhenKnown"] > summary["actualReplicaSeconds"], summary)
try:
    svg = ET.parse(f"{work}/chart.svg").getroot()
    lines_ = svg.findall(".//{http://www.w3.org/2000/svg}polyline")
    check("the SVG is well-formed XML with %d lines" % len(lines_), len(lines_) >= 6, len(lines_))
except ET.ParseError as e:
    check("the SVG is well-formed XML", False, e)
table = open(f"{work}/table.txt").read()
check("the table shows each step and the summary",
      table.count("\n") > 153 and "first scale-up: meshscaler" in table)
print(f"PYSUM {ok} {fail}")
PYEOF
)"
printf '%s\n' "$py_out" | grep -v '^PYSUM'
read -r _ py_ok py_fail < <(printf '%s\n' "$py_out" | grep '^PYSUM' || echo "PYSUM 0 1")
passed=$((passed + py_ok)); failed=$((failed + py_fail))
progress_lines=$(grep -c '^replay: read up to' "$work/replay.err")
if [[ $progress_lines -eq 3 ]]; then pass "three chunks read, a progress line each"; else fail "progress lines: $progress_lines"; fi
echo "replay: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
