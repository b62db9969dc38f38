# t_reserve.sh - test 13 (issue 26, part 1): the downstream guardrail reserves
# perReplica for every replica whose pod is not running yet
# (docs/decision-rules.md step 7), from the pods the controller's informer sees.
#
# A Deployment of 5 whose pods are never placed (lib.sh `deployment`); the test
# sets their phase through the status subresource, as a kubelet would. The
# MeshAutoscaler (spec.dryRun, so the count stays 5) asks 10 replicas; its
# downstream `edge` has limit 200, perReplica 25, maxUtilization 0.7 (140
# flows), usage 51:
#   2 of 5 Running   3 starting reserve 75: (140 - 51 - 75) / 25 = 0 -> 5
#                    (without the reservation 5 + floor(89 / 25) = 8)
#   5 of 5 Running   nothing reserved: 8
#   one terminating  (a finalizer keeps it, phase Running, with a deletionTimestamp)
#                    and its Pending replacement: 4 running, 1 starting reserves
#                    25: 5 + floor(64 / 25) = 7
# Beside it a --dry-run --output table controller must say the reservation in
# its row.

rsv_phase() { # NS POD PHASE : set the pod's phase through the status subresource
  k patch -n "$1" pod "$2" --subresource=status --type=merge -p "{\"status\":{\"phase\":\"$3\"}}" >/dev/null
}
rsv_is() { # NS NAME DESIRED : the last decision is DESIRED, held by the guardrail
  [[ "$(mas_desired "$1" "$2")" == "$3" && "$(mas_reason "$1" "$2")" == DownstreamLimit ]]
}
rsv_message() { jget "$1" mas "$2" '{.status.lastDecision.message}'; }
rsv_condition() { jget "$1" mas "$2" '{.status.conditions[?(@.type=="DownstreamLimited")].message}'; }

# rsv_step NS DESIRED WHAT SAYS : wait (15 s) for DESIRED, then check that
# lastDecision.message says SAYS (empty: says nothing of starting replicas).
rsv_step() {
  local ns="$1" t0 msg
  t0=$(now)
  if ! wait_for 15 rsv_is "$ns" edge "$2"; then
    fail "reserve: $3: desired $(mas_desired "$ns" edge) ($(mas_reason "$ns" edge)), want $2 (DownstreamLimit); message '$(rsv_message "$ns" edge)'"
    return
  fi
  ok "reserve: $3: desired $2 (DownstreamLimit) after $(elapsed "$t0") s"
  msg="$(rsv_message "$ns" edge)"
  if [[ ( -z "$4" && "$msg" != *starting* ) || ( -n "$4" && "$msg" == *"$4"* ) ]]; then
    ok "reserve: $3: lastDecision.message says '${4:-no starting replicas}'"
  else fail "reserve: $3: lastDecision.message is '$msg' (want '${4:-no starting replicas}')"; fi
}

test_reserve() {
  new_ns rsv || { fail "reserve: namespace"; return; }
  local ns="$NS" pods p seen
  deployment "$ns" edge 5
  wait_for 20 is_npods "$ns" edge 5 || { fail "reserve: the Deployment has $(npods "$ns" edge) pods, not 5"; return; }
  mapfile -t pods < <(pod_names "$ns" edge)
  rsv_phase "$ns" "${pods[0]}" Running && rsv_phase "$ns" "${pods[1]}" Running ||
    { fail "reserve: could not set the pods' phase"; return; }
  series_set test_load "$ns" edge 100
  set_and_wait test_edge_usage "$ns" edge 51 || { fail "reserve: series not in Prometheus"; return; }
  # (beh_mas and BEH_Q: t_behaviours.sh)
  beh_mas "$ns" edge edge "$BEH_Q" "  dryRun: true
  guardrails:
    downstream:
    - name: edge
      usageQuery: 'sum(test_edge_usage{namespace=\"{{namespace}}\",workload=\"{{name}}\"})'
      limit: 200
      perReplica: 25
      maxUtilization: 0.7" || { fail "reserve: MeshAutoscaler refused"; return; }
  ctl_start reserve "$RESTRICTED" --namespace "$ns" --sync-period 1s || { fail "reserve: controller not ready"; return; }
  ctl_start reserve-table "$RESTRICTED" --namespace "$ns" --sync-period 1s --dry-run --output table ||
    { fail "reserve: dry-run controller not ready"; return; }

  rsv_step "$ns" 5 "2 of 5 pods Running" "downstream edge allows only 5 (3 starting replicas reserve 75 flows)"
  if [[ "$(rsv_condition "$ns" edge)" == *"edge allows at most 5 replicas (3 starting replicas reserve 75 flows)" ]]; then
    ok "reserve: the DownstreamLimited condition says the reservation"
  else fail "reserve: DownstreamLimited says '$(rsv_condition "$ns" edge)'"; fi
  # Every sync grants the same nothing while the pods start (3 s of 1 s syncs).
  seen=""
  for _ in $(seq 1 15); do seen+="$(mas_desired "$ns" edge) "; sleep 0.2; done
  if [[ "$seen" =~ ^(5 )+$ ]]; then ok "reserve: held at 5 through 3 s of syncs"
  else fail "reserve: the decisions while 3 pods start: $seen(want 5 only)"; fi
  if wait_for 5 grep -q -- "(edge allows 5: 3 starting replicas reserve 75 flows)" "${CTL_OUT[reserve-table]}"; then
    ok "reserve: the --dry-run table row says it: $(grep -m1 -- 'starting replicas' "${CTL_OUT[reserve-table]}" | sed 's/  */ /g')"
  else fail "reserve: no dry-run row names the reservation; last row: $(tail -n 1 "${CTL_OUT[reserve-table]}")"; fi
  ctl_stop reserve-table

  for p in "${pods[@]:2}"; do rsv_phase "$ns" "$p" Running || fail "reserve: could not set $p Running"; done
  rsv_step "$ns" 8 "all 5 pods Running" ""

  # A terminating pod does not run for the guardrail, though its phase says Running.
  k patch -n "$ns" pod "${pods[4]}" --type=merge -p '{"metadata":{"finalizers":["mse2e.meshscaler.io/hold"]}}' >/dev/null &&
    k delete -n "$ns" pod "${pods[4]}" --wait=false >/dev/null || fail "reserve: could not delete ${pods[4]}"
  rsv_step "$ns" 7 "one pod terminating, its replacement Pending" "downstream edge allows only 7 (1 starting replica reserves 25 flows)"
  k patch -n "$ns" pod "${pods[4]}" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null 2>&1
  ctl_stop reserve
}
