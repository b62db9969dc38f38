# t_budget.sh - issue 26, part 2: shared downstream budgets in the controller
# (docs/decision-rules.md §2b, docs/controller.md "Shared budgets").
#
# One balancer `edge`: limit 200 (a series, so every member sees a change in one
# tick), maxUtilization 0.7 (140 flows), usage 40: a room of 100 flows, 10 replicas
# at perReplica 10. Every MeshAutoscaler names budget `edge`, asks 10 replicas
# from 1 (load 100, target 10) and may add 20 at once. Pods are never placed; the
# test sets the first pod of each Deployment Running, so every replica added is a
# starting one and reserves its 10 flows at the next round (step 7).
#   a, b in namespace A   the room's 10 replicas split 5/5: 6 each (alone, each
#                         would take all of it: 10 each); next round the 10
#                         starting replicas reserve all 100 flows: held at 6
#   c in namespace B      joins: "0 of 9 replicas asked ... shared by 3 objects"
#   limit 200 -> 300      room 210 - 40 - 100 reserved = 70: 7 replicas,
#                         namespaces first: A 4 (a 2, b 2), B 3 (c): 8, 8, 4
#                         (objects first would give c 2)
# The controller watches every namespace (a budget spans them): it also acts on
# the MeshAutoscalers earlier tests left in the environment, which name no budget.
# Then a --dry-run --output json controller at --sync-period 30s: a kick of a
# (annotation) brings b and c into its round (one "time"), and a's
# syncPeriodSeconds 3 sets the period of b and c too.

bgt_flows='
  behavior:
    scaleUp: {stabilizationWindowSeconds: 0, policies: [{type: Pods, value: 20, periodSeconds: 15}]}
  guardrails:
    downstream:
    - name: edge
      budget: edge
      usageQuery: sum(test_edge_usage{namespace="shared",workload="edge"})
      limitQuery: sum(test_edge_limit{namespace="shared",workload="edge"})
      perReplica: 10
      maxUtilization: 0.7'

bgt_msg() { jget "$1" mas "$2" '{.status.lastDecision.message}'; }
bgt_condition() { jget "$1" mas "$2" '{.status.conditions[?(@.type=="DownstreamLimited")].message}'; }
# bgt_at NS NAME REPLICAS SAYS : the Deployment has REPLICAS, the last decision is
# DownstreamLimit and its message says SAYS
bgt_at() {
  [[ "$(replicas "$1" "$2")" == "$3" && "$(mas_reason "$1" "$2")" == DownstreamLimit &&
     "$(bgt_msg "$1" "$2")" == *"$4"* ]]
}

# bgt_object NS NAME : a Deployment of 1 whose pod is Running, its load 100, its MeshAutoscaler.
bgt_object() {
  local pod
  deployment "$1" "$2" 1
  wait_for 20 is_npods "$1" "$2" 1 || { fail "budget: $1/$2 has $(npods "$1" "$2") pods, not 1"; return 1; }
  pod="$(pod_names "$1" "$2")"
  k patch -n "$1" pod "$pod" --subresource=status --type=merge -p '{"status":{"phase":"Running"}}' >/dev/null ||
    { fail "budget: could not set $pod Running"; return 1; }
  set_and_wait test_load "$1" "$2" 100 || { fail "budget: load of $1/$2 not in Prometheus"; return 1; }
  beh_mas "$1" "$2" "$2" "$BEH_Q" "$bgt_flows" || { fail "budget: MeshAutoscaler $1/$2 refused"; return 1; }
}

# bgt_watch SECONDS LIMIT NS:NAME... : sample the replicas every 0.2 s; fail when
# their sum ever passes LIMIT. BGT_MAX: the largest sum seen.
bgt_watch() {
  local secs="$1" limit="$2" end sum o
  shift 2
  end=$(( $(date +%s) + secs ))
  BGT_MAX=0
  while (( $(date +%s) < end )); do
    sum=0
    for o in "$@"; do sum=$(( sum + $(replicas "${o%%:*}" "${o#*:}") )); done
    (( sum > BGT_MAX )) && BGT_MAX=$sum
    sleep 0.2
  done
  (( BGT_MAX <= limit ))
}

bgt_metric() { # NAME LABELS : the controller's value of that series, or "none"
  ctl_metrics budget | awk -v s="$1{$2}" 'index($0, s " ") == 1 { print $2; found = 1 } END { if (!found) print "none" }'
}

# bgt_rounds FILE NS_A NS_B : per dry-run JSON line "time namespace/name budgets-objects".
bgt_rounds() {
  python3 - "$@" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("namespace") not in sys.argv[2:]:
        continue
    b = o.get("budgets", {}).get("edge")
    print("%.3f %s/%s %s" % (o["time"], o["namespace"], o["name"], b["objects"] if b else "-"))
PY
}

test_budget() {
  new_ns bga || { fail "budget: namespace"; return; }
  local na="$NS" nb t0 out lines before after
  new_ns bgb || { fail "budget: namespace"; return; }
  nb="$NS"
  series_set test_edge_usage shared edge 40
  set_and_wait test_edge_limit shared edge 200 || { fail "budget: edge series not in Prometheus"; return; }
  bgt_object "$na" a && bgt_object "$na" b || return
  ctl_start budget "$RESTRICTED" --sync-period 1s || { fail "budget: controller not ready"; return; }

  # --- a and b split the room
  t0=$(now)
  if wait_for 20 bgt_at "$na" a 6 "budget edge: 0 of 4 replicas asked, room 0 flows shared by 2 objects" &&
     wait_for 5 bgt_at "$na" b 6 "budget edge: 0 of 4 replicas asked, room 0 flows shared by 2 objects"; then
    ok "budget: a and b at 6 each after $(elapsed "$t0") s, then held: 'budget edge: 0 of 4 replicas asked, room 0 flows shared by 2 objects'"
  else fail "budget: a $(replicas "$na" a) b $(replicas "$na" b) (want 6, 6); a says '$(bgt_msg "$na" a)'"; fi
  if bgt_watch 3 12 "$na:a" "$na:b"; then ok "budget: a + b stay at most 12 replicas (the room's 10 added) for 3 s"
  else fail "budget: a + b reached $BGT_MAX replicas (room for 12)"; fi
  out="$(k get events -n "$na" --field-selector involvedObject.name=a,reason=SuccessfulRescale -o 'jsonpath={.items[*].message}')"
  if [[ "$out" == *"budget edge: 5 of 9 replicas asked, room 100 flows shared by 2 objects"* ]]; then
    ok "budget: a's SuccessfulRescale event says 'budget edge: 5 of 9 replicas asked, room 100 flows shared by 2 objects'"
  else fail "budget: a's SuccessfulRescale events say '$out'"; fi
  if [[ "$(mas_cond "$na" a DownstreamLimited)" == "True "* && "$(bgt_condition "$na" b)" == *"budget edge: 0 of 4 replicas asked"* ]]; then
    ok "budget: DownstreamLimited True, its message '$(bgt_condition "$na" b)'"
  else fail "budget: DownstreamLimited is '$(mas_cond "$na" b DownstreamLimited)': '$(bgt_condition "$na" b)'"; fi
  out="$(k get mas -n "$na" 2>&1)"
  if [[ "$(grep -c DownstreamLimit <<<"$out")" == 2 ]]; then ok "budget: kubectl get mas shows DownstreamLimit for a and b"
  else fail "budget: kubectl get mas: $out"; fi
  if [[ "$(bgt_metric meshscaler_budget_room 'budget="edge"')" == 0 &&
        "$(bgt_metric meshscaler_budget_granted_replicas "namespace=\"$na\",name=\"a\",budget=\"edge\"")" == 0 ]]; then
    ok "budget: /metrics has meshscaler_budget_room{budget=\"edge\"} 0 and a's granted replicas 0"
  else fail "budget: /metrics: $(ctl_metrics budget | grep -E '^meshscaler_budget' | tr '\n' ' ')"; fi

  # --- c, in another namespace, joins; then the room grows: namespaces first
  bgt_object "$nb" c || return
  if wait_for 15 bgt_at "$nb" c 1 "budget edge: 0 of 9 replicas asked, room 0 flows shared by 3 objects" &&
     wait_for 5 bgt_at "$na" a 6 "shared by 3 objects"; then
    ok "budget: c in another namespace decides in the same split: 'budget edge: 0 of 9 replicas asked, room 0 flows shared by 3 objects'"
  else fail "budget: c at $(replicas "$nb" c) says '$(bgt_msg "$nb" c)'; a says '$(bgt_msg "$na" a)'"; fi
  set_and_wait test_edge_limit shared edge 300 || { fail "budget: limit 300 not in Prometheus"; return; }
  if wait_for 15 bgt_at "$nb" c 4 "budget edge: 0 of 6 replicas asked" && wait_for 5 bgt_at "$na" a 8 "" &&
     wait_for 5 bgt_at "$na" b 8 ""; then
    ok "budget: room 70 split namespaces first: a 8, b 8, c 4 ('$(bgt_msg "$nb" c | grep -o 'budget edge[^;]*')')"
  else fail "budget: a $(replicas "$na" a) b $(replicas "$na" b) c $(replicas "$nb" c) (want 8 8 4); c says '$(bgt_msg "$nb" c)'"; fi
  if bgt_watch 3 20 "$na:a" "$na:b" "$nb:c"; then ok "budget: a + b + c stay at most 20 replicas (the room's 17 added) for 3 s"
  else fail "budget: a + b + c reached $BGT_MAX replicas (room for 20)"; fi
  [[ "$(bgt_metric meshscaler_budget_granted_replicas "namespace=\"$nb\",name=\"c\",budget=\"edge\"")" != none ]] ||
    fail "budget: no meshscaler_budget_granted_replicas series for c"
  ctl_stop budget

  # --- a dry-run twin at 30 s: a kick of a brings b and c along; a's period is theirs
  ctl_start budget-dry "$RESTRICTED" --sync-period 30s --dry-run --output json ||
    { fail "budget: dry-run controller not ready"; return; }
  wait_for 10 grep -q "\"name\":\"c\"" "${CTL_OUT[budget-dry]}" || fail "budget: no dry-run line for c"
  sleep 2
  k annotate -n "$na" mas a mse2e.meshscaler.io/kick=1 >/dev/null
  sleep 3
  lines="$(bgt_rounds "${CTL_OUT[budget-dry]}" "$na" "$nb")"
  # the round of a's last line: every object of it, with its budget's member count
  out="$(awk 'NR == FNR { if ($2 ~ /\/a$/) t = $1; next } $1 == t { print $2, $3 }' <(echo "$lines") <(echo "$lines") | sort | tr '\n' ';')"
  if [[ "$(grep -c "/a " <<<"$lines")" -ge 2 && "$out" == "$na/a 3;$na/b 3;$nb/c 3;" ]]; then
    ok "budget: a kicked at the 30 s period decides in one round with b and c (--output json: one time, budgets.edge.objects 3)"
  else fail "budget: the round of a's kick holds '$out'; every line: $(tr '\n' ';' <<<"$lines")"; fi
  # (a spec change is an early sync: it waits for the catch-up interval or the grid)
  before="$(bgt_rounds "${CTL_OUT[budget-dry]}" "$na" "$nb" | grep -c "/a ")"
  k patch -n "$na" mas a --type=merge -p '{"spec":{"syncPeriodSeconds":3}}' >/dev/null
  wait_for 35 eval '(( $(bgt_rounds "${CTL_OUT[budget-dry]}" "$na" "$nb" | grep -c "/a ") > before ))' ||
    fail "budget: a not synced after its period changed"
  before="$(bgt_rounds "${CTL_OUT[budget-dry]}" "$na" "$nb" | grep -c "/c ")"
  sleep 12
  after="$(bgt_rounds "${CTL_OUT[budget-dry]}" "$na" "$nb" | grep -c "/c ")"
  if (( after - before >= 3 )); then ok "budget: c (its own period 30 s) syncs every 3 s with a: $((after - before)) lines in 12 s"
  else fail "budget: c synced $((after - before)) times in 12 s (a's period is 3 s)"; fi
  ctl_stop budget-dry

  # --- the series go with the members
  ctl_start budget "$RESTRICTED" --sync-period 1s || { fail "budget: controller not ready"; return; }
  wait_for 10 eval '[[ "$(bgt_metric meshscaler_budget_granted_replicas "namespace=\"$nb\",name=\"c\",budget=\"edge\"")" != none ]]' ||
    fail "budget: no granted series for c after a restart"
  k delete -n "$nb" mas c >/dev/null
  if wait_for 10 eval '[[ "$(bgt_metric meshscaler_budget_granted_replicas "namespace=\"$nb\",name=\"c\",budget=\"edge\"")" == none ]]'; then
    ok "budget: c deleted: its meshscaler_budget_granted_replicas series is gone"
  else fail "budget: c deleted, its granted series stays"; fi
  k patch -n "$na" mas a --type=json -p '[{"op":"remove","path":"/spec/guardrails/downstream/0/budget"}]' >/dev/null
  k delete -n "$na" mas b >/dev/null
  if wait_for 10 eval '[[ "$(bgt_metric meshscaler_budget_room "budget=\"edge\"")" == none &&
        "$(bgt_metric meshscaler_budget_granted_replicas "namespace=\"$na\",name=\"a\",budget=\"edge\"")" == none ]]'; then
    ok "budget: a leaves the budget, b deleted: meshscaler_budget_room{budget=\"edge\"} and a's grant are gone"
  else fail "budget: after the last member left: $(ctl_metrics budget | grep -E '^meshscaler_budget' | tr '\n' ' ')"; fi
  ctl_stop budget
}
