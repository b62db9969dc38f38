# t_oneround.sh - test 14 (issue 28, items 1 and 2): a mass change stays one
# Prometheus tick per period, and its scale writes go first. Against the real
# API server and Prometheus, at --sync-period 300s (the grid's next round is
# at least 60 s after the first, past the end of these checks):
#
#   own status   the first sync of `own` (and of the 3 others) writes its
#                status (the API server's resourceVersion moves, the watch
#                delivers the update); `own` has no annotations at all
#                (created, not applied: issue 28's objects were, and 088ec39
#                re-synced such an object on each of its status writes: its
#                filter compared two absent annotations as different); from
#                the start to 12 s after, the
#                controller syncs each object once
#                (meshscaler_sync_duration_seconds_count: 4) in one round
#                (meshscaler_round_duration_seconds_count: 1);
#   early syncs  three other objects changed one after another, 2 s apart
#                (spec changes: each one marks its object for an early sync):
#                the first is observed at once, by one catch-up tick; the
#                other two join the next round instead of a tick of their own
#                (today's main ran a round and a tick per change: 3 more), and
#                are synced by the next catch-up, 15 s after the first;
#
#   in small    a mass change in miniature: 16 objects each asking 2 -> 4 at
#                once, at --sync-period 5s, through a client of 2 requests a
#                second (--kube-api-qps 2): as 5,000 scale writes and 10,000
#                status writes did at 300 per second in issue 28, the writes
#                take longer than a period to drain. The scale writes go first:
#                the 16 land within 16 / 2 = 7.5 s of the first (3 s spare),
#                today's main shared the rate with the status writes and Events
#                and took 16.5 s. The rounds and queries meanwhile are printed.
#
#   in slow     scale writes are not bound to a worker each: 12 objects each
#                asking 2 -> 4 at once, 2 workers (--concurrent-syncs 2), and
#                an API server slow to admit each scale write (a validating
#                webhook answers after 3 s): the 12 writes are in flight
#                together and land within 8 s of the first (a worker per
#                write, as on 1963794's parent: 5 x 3 s = 15 s at least from
#                the first to the last, and past the 5 s period a waiting
#                sync's observation goes stale; with the writers 1.0 s at
#                load 2, 6.2 s at load ~20 and 1.5 s admissions);
#                a 13th object whose first 2 writes are refused (403) is not
#                recorded as having scaled: under a Pods policy of 1 per 60 s
#                a recorded scale event would hold its next write a minute,
#                here the retry writes 2 -> 3 within 20 s, and its scale
#                counter and SuccessfulRescale Events say 1 scale.
#
# 'small' and 'slow' print the longest time from a decision to its write
# (the `scaled` line's after_decision) without a bound: a write that waits
# past the 5 s period goes stale and is decided again, so in 'slow' it stays
# near one admission (3.0 s with a worker per write, 4.3 s with the
# writers); in 'small' the first write lands 11.4 s after its decision and
# the last 18.9 s (0762102): at 2 requests a second something takes ~23
# tokens first (409s re-read and written again? not found out yet).
#
# The first two read the controller's own counters, which count every round
# and every sync; the others its log's `scaled` lines, the webhook's log and
# the API server's objects. The figures are printed.

one_metric() { # CTL REGEX : sum of the controller's series matching REGEX (0: none)
  ctl_metrics "$1" | grep -v '^#' | grep -E "$2" | awk '{s += $NF} END {printf "%d\n", s}'
}
one_syncs() { one_metric "$1" '^meshscaler_sync_duration_seconds_count'; }
one_rounds() { one_metric "$1" '^meshscaler_round_duration_seconds_count'; }
one_observed() { # NS NAME : its status observed the current generation
  [[ "$(jget "$1" mas "$2" '{.status.observedGeneration}')" == "$(jget "$1" mas "$2" '{.metadata.generation}')" ]]
}
one_mas() { # NS NAME [MAX [VERB]] : the MeshAutoscaler on Deployment NAME (VERB: apply, or
  # create: no kubectl.kubernetes.io/last-applied-configuration, so no annotations at all)
  k "${4:-apply}" -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $2}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $2}
  minReplicas: 1
  maxReplicas: ${3:-20}
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
YAML
}

test_oneround() {
  new_ns one || { fail "oneround: namespace"; return; }
  local ns="$NS" rv0 rv1 s0 s1 r0 r1 q0 q1 n
  deployment "$ns" own 2
  for n in e1 e2 e3; do deployment "$ns" "$n" 2; series_set test_load "$ns" "$n" 20; done
  set_and_wait test_load "$ns" own 20 || { fail "oneround: series not in Prometheus"; return; }
  # own has no annotations (created, as by a controller or `kubectl create`), the
  # others one (kubectl apply's): a watch event whose object and predecessor both
  # lack annotations is a status-only update too.
  one_mas "$ns" own 20 create
  for n in e1 e2 e3; do one_mas "$ns" "$n"; done
  rv0="$(rv "$ns" mas own)"
  ctl_start oneround "$RESTRICTED" --namespace "$ns" --sync-period 300s || { fail "oneround: controller not ready"; return; }

  # --- own status ---
  wait_for 20 has_decision "$ns" own || { fail "oneround: own was never synced (no status)"; return; }
  rv1="$(rv "$ns" mas own)"
  if [[ -n "$rv1" && "$rv1" != "$rv0" ]]; then ok "oneround: the first sync wrote own's status (resourceVersion $rv0 -> $rv1)"
  else fail "oneround: own's resourceVersion did not move ($rv0 -> $rv1): the check below proves nothing"; fi
  s0="$(one_syncs oneround)"; r0="$(one_rounds oneround)"
  sleep 12
  s1="$(one_syncs oneround)"; r1="$(one_rounds oneround)"
  note "oneround: 12 s after the first round: syncs $s0 -> $s1, rounds $r0 -> $r1 (4 objects, --sync-period 300s)"
  # One round and one sync per object since the start: a re-sync on the status
  # write's watch event would show as a second round and 8 syncs, here or before.
  if [[ "$s0" == 4 && "$s1" == 4 && "$r0" == 1 && "$r1" == 1 ]]; then
    ok "oneround: writing their status synced no object again (4 syncs, 1 round since the start)"
  else fail "oneround: after the status writes: syncs $s0 -> $s1, rounds $r0 -> $r1 (want 4 syncs and 1 round since the start)"; fi

  # --- early syncs of three objects, 2 s apart ---
  r0="$(one_rounds oneround)"
  q0="$(one_metric oneround '^meshscaler_prometheus_queries_total')"
  for n in e1 e2 e3; do one_mas "$ns" "$n" 19; sleep 2; done
  sleep 2
  r1="$(one_rounds oneround)"
  q1="$(one_metric oneround '^meshscaler_prometheus_queries_total')"
  note "oneround: 3 spec changes 2 s apart: rounds $r0 -> $r1, Prometheus queries $q0 -> $q1"
  if ((r1 - r0 == 1)); then ok "oneround: three early syncs, one catch-up round (the first change's); the others wait for the next round"
  else fail "oneround: three early syncs ran $((r1 - r0)) rounds in 8 s, $((q1 - q0)) queries (want 1 catch-up round)"; fi
  # ...and they are not lost: the next catch-up (15 s after the first) syncs them.
  if wait_for 20 one_observed "$ns" e3 && one_observed "$ns" e2; then
    ok "oneround: the held early syncs ran in the next catch-up round (e2, e3 observed their new generation)"
  else fail "oneround: e2/e3 never synced their spec change: observedGeneration $(jget "$ns" mas e2 '{.status.observedGeneration}')/$(jget "$ns" mas e3 '{.status.observedGeneration}')"; fi
  ctl_stop oneround
  one_small
  one_slow
}

one_all_at() { # NS N REPLICAS : the N Deployments m1..mN all have REPLICAS
  local i
  for i in $(seq 1 "$2"); do is_replicas "$1" "m$i" "$3" || return 1; done
}

# one_span FILE [PREFIX] : "N SECONDS LAG": how many `scaled` lines the
# controller's JSON log holds (of objects whose key starts with PREFIX), the
# seconds from the first to the last, and the longest after_decision of them
# (from the worker's decision to the write's answer).
one_span() {
  python3 - "$1" "${2:-}" <<'PY'
import datetime, json, sys
ts, lag = [], []
for line in open(sys.argv[1]):
    try:
        j = json.loads(line)
    except ValueError:
        continue
    if j.get("msg") == "scaled" and j.get("object", "").startswith(sys.argv[2]):
        ts.append(datetime.datetime.strptime(j["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp())
        lag.append(j.get("after_decision", float("inf")))
print(len(ts), "%.1f" % (max(ts) - min(ts) if ts else 0), "%.1f" % (max(lag) if lag else 0))
PY
}

one_small() {
  new_ns onesm || { fail "oneround: namespace"; return; }
  local ns="$NS" i n=16 r0 r1 nscaled span
  for i in $(seq 1 $n); do deployment "$ns" "m$i" 2; series_set test_load "$ns" "m$i" 40; done
  publish
  prom_wait "count(test_load{namespace=\"$ns\"}) == $n" 15 || { fail "oneround: small: series not in Prometheus"; return; }
  for i in $(seq 1 $n); do one_mas "$ns" "m$i"; done
  ctl_start small "$RESTRICTED" --namespace "$ns" --sync-period 5s --kube-api-qps 2 --kube-api-burst 2 ||
    { fail "oneround: small: controller not ready"; return; }
  r0="$(one_rounds small)"
  if ! wait_for 60 one_all_at "$ns" $n 4; then fail "oneround: small: not every Deployment reached 4 in 60 s"; ctl_stop small; return; fi
  r1="$(one_rounds small)"
  read -r nscaled span lag < <(one_span "${CTL_ERR[small]}")
  note "oneround: small: rounds $r0 -> $r1, stale observations $(one_metric small '^meshscaler_stale_observations_total'), Prometheus queries $(one_metric small '^meshscaler_prometheus_queries_total'), $nscaled scale writes in $span s, the last $lag s after its decision"
  if [[ "$nscaled" == "$n" ]] && fle "$span" 10.5; then
    ok "oneround: small: the $n scale writes landed within $span s of the first at 2 requests a second (7.5 s at best; want at most 10.5)"
  else fail "oneround: small: $nscaled scale writes over $span s at 2 requests a second (want $n within 10.5 s: status writes and Events go after them)"; fi
  ctl_stop small
}

one_slow() {
  new_ns oneslow || { fail "oneround: namespace"; return; }
  local ns="$NS" i n=12 nscaled span reqs scales
  for i in $(seq 1 $n); do deployment "$ns" "m$i" 2; series_set test_load "$ns" "m$i" 40; done
  deployment "$ns" bad 2; series_set test_load "$ns" bad 40
  publish
  prom_wait "count(test_load{namespace=\"$ns\"}) == $((n + 1))" 15 || { fail "oneround: slow: series not in Prometheus"; return; }
  beh_webhook_start "$ns" || { fail "oneround: slow: the webhook did not start ($(head -c 300 "$WORK/beh-webhook/webhook.err" 2>/dev/null))"; beh_webhook_stop; return; }
  for i in $(seq 1 $n); do beh_mode "m$i" sleep 100 3000; one_mas "$ns" "m$i"; done
  beh_mode bad deny 2
  k apply -n "$ns" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: bad}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: bad}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
$BEH_POLICY
YAML
  ctl_start slow "$RESTRICTED" --namespace "$ns" --sync-period 5s --concurrent-syncs 2 \
    --kube-api-qps 50 --kube-api-burst 50 || { fail "oneround: slow: controller not ready"; beh_webhook_stop; return; }
  if ! wait_for 60 one_all_at "$ns" $n 4; then fail "oneround: slow: not every Deployment reached 4 in 60 s"; fi
  read -r nscaled span lag < <(one_span "${CTL_ERR[slow]}" "$ns/m")
  note "oneround: slow: $nscaled scale writes in $span s (each admitted after 3 s, 2 workers), the last $lag s after its decision, stale observations $(one_metric slow '^meshscaler_stale_observations_total')"
  if [[ "$nscaled" == "$n" ]] && fle "$span" 8; then
    ok "oneround: slow: the $n scale writes landed within $span s of the first with 2 workers (want at most 8)"
  else fail "oneround: slow: $nscaled scale writes over $span s with 2 workers, each admitted after 3 s (want $n within 8 s: a worker per write takes 15 s)"; fi

  # --- bad: 2 writes refused, then one allowed ---
  if wait_for 30 is_replicas "$ns" bad 3; then
    ok "oneround: slow: after 2 refused writes bad was written 2 -> 3 at its retry (a refused write is no scale event)"
  else fail "oneround: slow: bad is $(replicas "$ns" bad) 30 s after the start, want 3; webhook saw: $(beh_requests bad | tr '\n' ';')"; fi
  reqs="$(beh_requests bad | awk '{print $4}' | tr '\n' ' ')"
  scales="$(one_metric slow "^meshscaler_scales_total\\{.*name=\"bad\"")"
  wait_for 10 one_rescales "$ns" bad SuccessfulRescale 1
  note "oneround: slow: bad: the webhook saw: $reqs; meshscaler_scales_total $scales; Events FailedRescale $(one_rescales "$ns" bad FailedRescale), SuccessfulRescale $(one_rescales "$ns" bad SuccessfulRescale)"
  if [[ "$reqs" == "deny deny allow"* && "$scales" == 1 ]] && ! one_rescales "$ns" bad FailedRescale 0 &&
    one_rescales "$ns" bad SuccessfulRescale 1; then
    ok "oneround: slow: bad: 2 refused writes (FailedRescale), 1 written: one scale counted, one SuccessfulRescale"
  else fail "oneround: slow: bad: webhook saw '$reqs', scales counted $scales, Events FailedRescale $(one_rescales "$ns" bad FailedRescale), SuccessfulRescale $(one_rescales "$ns" bad SuccessfulRescale) (want deny deny allow, 1, FailedRescale and one SuccessfulRescale)"; fi
  ctl_stop slow
  beh_webhook_stop
}
# one_rescales NS NAME REASON [WANT] : the count of REASON Events about
# MeshAutoscaler NAME (folded ones count theirs); with WANT, whether it is WANT.
one_rescales() {
  local n
  n="$(k get events -n "$1" --field-selector "involvedObject.name=$2,involvedObject.kind=MeshAutoscaler,reason=$3" \
    -o 'jsonpath={range .items[*]}{.count}{"\n"}{end}' 2>/dev/null | awk '{s += ($1 == "" ? 1 : $1)} END {print s + 0}')"
  if [[ $# -ge 4 ]]; then [[ "$n" == "$4" ]]; else echo "$n"; fi
}
