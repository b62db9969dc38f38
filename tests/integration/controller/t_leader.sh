# t_leader.sh - test 4: two controllers with --leader-elect and the same
# --leader-election-id/namespace. The first one started holds the Lease and is
# the only one that writes; the second reports itself not leader and makes no
# write request; killed with SIGKILL, the leader is replaced by the second one,
# which then scales; on SIGTERM the new leader releases the Lease.

lease_holder() { jget "$1" lease "$2" '{.spec.holderIdentity}'; }
has_holder() { [[ -n "$(lease_holder "$1" "$2")" ]]; }
holder_is_not() { local h; h="$(lease_holder "$1" "$2")"; [[ -n "$h" && "$h" != "$3" ]]; }
holder_empty() { [[ -z "$(lease_holder "$1" "$2")" ]]; }

# leader_gauge NAME : the value of the controller's meshscaler_leader gauge
# (1 while it may act), or "none".
leader_gauge() {
  local m
  m="$(ctl_metrics "$1")"
  awk '$1 ~ /^meshscaler_leader(\{.*\})?$/ && !found {print $2; found=1} END {if (!found) print "none"}' <<<"$m"
}

# write_requests NAME : series of meshscaler_kube_requests_total (or any
# request counter) whose operation/verb names a write, other than to a Lease,
# with a value above 0; and any meshscaler_scales_total above 0. Empty: none.
write_requests() {
  local m
  m="$(ctl_metrics "$1" | grep -v '^#')"
  grep -iE '^[a-z_]*request[a-z_]*\{' <<<"$m" |
    grep -iE '(operation|verb|method)="[^"]*(patch|put|post|update|create|write|apply)' |
    grep -viE 'lease|coordination' | awk '$NF + 0 > 0'
  grep -E '^meshscaler_scales_total' <<<"$m" | awk '$NF + 0 > 0'
}

# lease_role NS ID : grant the restricted identity (meshscaler-system/meshscaler)
# what the chart's leader-election Role grants in its release namespace, here in
# NS for the Lease ID: create leases, get/update/patch only the one named ID. The
# shipped ClusterRole has no Lease rights, so this also proves these are enough.
lease_role() {
  k apply -f - >/dev/null <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: meshscaler-leader-election, namespace: $1}
rules:
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["create"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  resourceNames: ["$2"]
  verbs: ["get", "update", "patch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: meshscaler-leader-election, namespace: $1}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: meshscaler-leader-election}
subjects: [{kind: ServiceAccount, name: meshscaler, namespace: meshscaler-system}]
YAML
}

test_leader() {
  new_ns leader || { fail "leader: namespace"; return; }
  local ns="$NS" id="mse2e-leader-$$"
  lease_role "$ns" "$id" || { fail "leader: the Lease Role"; return; }
  deployment "$ns" le 2
  set_and_wait test_load "$ns" le 20 || fail "leader: series not in Prometheus"
  mas_to le apps/v1 Deployment le | mas_apply "$ns"
  local flags=(--namespace "$ns" --sync-period 1s --leader-elect --leader-election-id "$id" --leader-election-namespace "$ns")

  ctl_start c1 "$RESTRICTED" "${flags[@]}" || { fail "leader: c1 never got ready"; return; }
  if wait_for 20 has_holder "$ns" "$id"; then ok "c1 holds Lease $ns/$id as '$(lease_holder "$ns" "$id")'"
  else fail "no Lease $ns/$id with a holder 20 s after c1 started"; return; fi
  local h1
  h1="$(lease_holder "$ns" "$id")"
  if [[ "$h1" == *"${CTL_PID[c1]}"* ]]; then ok "the holder identity names c1's PID ${CTL_PID[c1]}"
  else fail "the holder identity '$h1' does not name c1's PID ${CTL_PID[c1]} (hostname_pid)"; fi
  ctl_start c2 "$RESTRICTED" "${flags[@]}" || { fail "leader: c2 never got ready (readyz must not wait for leadership)"; return; }
  ok "c2 is ready while not leader"

  set_and_wait test_load "$ns" le 50
  if wait_for 15 is_replicas "$ns" le 5; then ok "with two controllers the leader scales 2 -> 5"
  else fail "with two controllers: replicas $(replicas "$ns" le), reason $(mas_reason "$ns" le)"; fi
  sleep 2
  if [[ "$(lease_holder "$ns" "$id")" == "$h1" ]]; then ok "the Lease holder stayed c1"
  else fail "the Lease moved to '$(lease_holder "$ns" "$id")' while c1 runs"; fi
  local g1 g2
  g1="$(leader_gauge c1)"
  g2="$(leader_gauge c2)"
  if [[ "$g1" =~ ^1(\.0)?$ && "$g2" =~ ^0(\.0)?$ ]]; then ok "/metrics: c1 leader=$g1, c2 leader=$g2"
  else fail "/metrics leader gauge: c1 '$g1', c2 '$g2' (want 1 and 0)"; fi
  local w2
  w2="$(write_requests c2)"
  if [[ -z "$w2" && "$(ctl_metrics c2)" == *meshscaler_* ]]; then
    ok "the non-leader c2 made no write request (its request counters)"
  elif [[ -n "$w2" ]]; then
    fail "the non-leader c2 wrote: $(echo "$w2" | head -n 3 | tr '\n' ';')"
  else
    fail "c2's /metrics does not answer"
  fi
  if [[ -n "$(write_requests c1)" ]]; then ok "the leader's counters show its writes: $(write_requests c1 | head -n 1)"
  else fail "the leader's /metrics shows no write request, although it scaled"; fi

  # Kill the leader without a chance to release the Lease: c2 must take over.
  local t_kill
  ctl_stop c1 KILL
  t_kill=$(now)
  if wait_for 40 holder_is_not "$ns" "$id" "$h1"; then
    ok "after SIGKILL of c1, c2 holds the Lease after $(elapsed "$t_kill") s ('$(lease_holder "$ns" "$id")')"
  else
    fail "the Lease still names '$(lease_holder "$ns" "$id")' 40 s after c1 was killed"
  fi
  set_and_wait test_load "$ns" le 80
  if wait_for 15 is_replicas "$ns" le 8; then ok "the new leader scales 5 -> 8"
  else fail "after the takeover: replicas $(replicas "$ns" le), reason $(mas_reason "$ns" le)"; fi
  g2="$(leader_gauge c2)"
  if [[ "$g2" =~ ^1(\.0)?$ ]]; then ok "/metrics: c2 leader=$g2 now"; else fail "/metrics: c2 leader gauge '$g2' after the takeover"; fi

  ctl_stop c2
  if wait_for 3 holder_empty "$ns" "$id"; then ok "c2 released the Lease on SIGTERM"
  else fail "after c2's clean exit the Lease still names '$(lease_holder "$ns" "$id")'"; fi
}
