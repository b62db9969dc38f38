# t_pause.sh - test 5: the pausing annotations, and an HPA on the same
# Deployment.
#   p1  paused: "true"          decides and reports, never writes the target
#   p2  paused-replicas: "4"    the target is held at 4 (load asks 7)
#   h1  an HPA targets it too   AbleToScale=False ConflictingAutoscaler, an
#                               event, no write until the HPA is deleted
#   sd  spec.dryRun, on h1 too  runs beside the HPA (the migration path):
#                               decides and records status, condition DryRun
#   sh  spec.dryRun on hs       beside an HPA that has decided (min 3 lifts hs
#                               from 1 to 3): status.hpaComparison, the HPA
#                               column of -o wide, the /metrics gauges
#   p3  paused-scale-out        2 replicas, load asks 6: stays 2
#   p4  paused-scale-in         5 replicas, load asks 2, scale-down window 0:
#                               stays 5
#   m1, m2 on Deployment dd     two live MeshAutoscalers on one workload: both
#                               ConflictingAutoscaler, no write; m2 deleted ->
#                               m1 scales
# The HPA controller of kube-controller-manager acts on h1's HPA: with
# min = max = 2 and no metrics server it has nothing to do while h1 has 2
# replicas, and would pull it back to 2 if meshscaler ever wrote.

test_pause() {
  new_ns pause || { fail "pause: namespace"; return; }
  local ns="$NS" d
  deployment "$ns" p1 2
  deployment "$ns" p2 2
  deployment "$ns" h1 2
  deployment "$ns" p3 2
  deployment "$ns" p4 5
  deployment "$ns" dd 2
  deployment "$ns" hs 1
  series_set test_load "$ns" p3 60
  series_set test_load "$ns" p4 20
  series_set test_load "$ns" dd 60
  series_set test_load "$ns" p1 60
  series_set test_load "$ns" p2 70
  series_set test_load "$ns" h1 60
  series_set test_load "$ns" hs 60
  publish
  { hpa_to h1 2 2; echo ---; hpa_to hs 3 3; } | k apply -n "$ns" -f - >/dev/null
  {
    mas_to p1 apps/v1 Deployment p1 | sed 's/^metadata: .*/metadata: {name: p1, annotations: {autoscaling.meshscaler.io\/paused: "true"}}/'
    echo ---
    mas_to p2 apps/v1 Deployment p2 | sed 's/^metadata: .*/metadata: {name: p2, annotations: {autoscaling.meshscaler.io\/paused-replicas: "4"}}/'
    echo ---
    mas_to h1 apps/v1 Deployment h1
    echo ---
    mas_to sd apps/v1 Deployment h1 | sed 's/^  maxReplicas: 10/  maxReplicas: 10\n  dryRun: true/'
    echo ---
    mas_to sh apps/v1 Deployment hs | sed 's/^  maxReplicas: 10/  maxReplicas: 10\n  dryRun: true/'
    echo ---
    mas_to p3 apps/v1 Deployment p3 | sed 's/^metadata: .*/metadata: {name: p3, annotations: {autoscaling.meshscaler.io\/paused-scale-out: "true"}}/'
    echo ---
    mas_to p4 apps/v1 Deployment p4 | sed 's/^metadata: .*/metadata: {name: p4, annotations: {autoscaling.meshscaler.io\/paused-scale-in: "true"}}/'
    printf '  behavior:\n    scaleDown: {stabilizationWindowSeconds: 0}\n'
    echo ---
    mas_to m1 apps/v1 Deployment dd
    echo ---
    mas_to m2 apps/v1 Deployment dd
  } | mas_apply "$ns" || { fail "pause: objects refused"; return; }
  prom_wait "test_load{namespace=\"$ns\",workload=\"h1\"} == 60" 15
  declare -A gen=() want=([p1]=2 [h1]=2 [p3]=2 [p4]=5 [dd]=2)
  # generation moves only with the spec (status writes by the Deployment
  # controller leave it alone), so no need to wait for the status to settle
  for d in p1 h1 p3 p4 dd; do
    gen[$d]="$(generation "$ns" "$d")"
  done
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "pause: the live controller never got ready"; return; }

  # paused-replicas: held at 4
  if wait_for 15 is_replicas "$ns" p2 4; then ok "paused-replicas \"4\": p2 set to 4"
  else fail "paused-replicas \"4\": p2 replicas $(replicas "$ns" p2), reason $(mas_reason "$ns" p2)"; fi
  if hold 4 "$ns" p2 4; then ok "p2 held at 4 although the load asks 7"
  else fail "p2 not held at 4: $HOLD_SEEN"; fi
  k scale -n "$ns" deployment p2 --replicas=6 >/dev/null
  if wait_for 10 is_replicas "$ns" p2 4; then ok "p2 scaled by hand to 6 is brought back to 4"
  else fail "p2 scaled by hand to 6 stays at $(replicas "$ns" p2)"; fi

  # paused: decides, reports, never writes
  if wait_for 10 has_decision "$ns" p1; then ok "paused p1 still decides and reports (lastDecision desired $(mas_desired "$ns" p1), reason $(mas_reason "$ns" p1))"
  else fail "paused p1 reports no decision (status: $(mas_status_json "$ns" p1 | cut -c1-200))"; fi
  # conflict: condition and event
  if wait_for 10 cond_is "$ns" h1 AbleToScale "False ConflictingAutoscaler"; then ok "h1 beside an HPA: AbleToScale False ConflictingAutoscaler"
  else fail "h1 beside an HPA: AbleToScale '$(mas_cond "$ns" h1 AbleToScale)'"; fi
  if wait_for 5 has_event "$ns" h1 ConflictingAutoscaler; then ok "h1: a ConflictingAutoscaler event ($EVENT_SEEN)"
  else fail "h1: no ConflictingAutoscaler event (events: $(events_for "$ns" h1 | tr '\n' ';'))"; fi
  if wait_for 5 has_decision "$ns" sd && wait_for 5 cond_is "$ns" sd DryRun True &&
     [[ "$(mas_cond "$ns" sd AbleToScale)" != *ConflictingAutoscaler* ]]; then
    ok "sd (spec.dryRun) beside the HPA decides (desired $(mas_desired "$ns" sd), $(mas_reason "$ns" sd)), DryRun True, no conflict"
  else
    fail "sd (spec.dryRun) beside the HPA: lastDecision '$(mas_reason "$ns" sd)', DryRun '$(mas_cond "$ns" sd DryRun)', AbleToScale '$(mas_cond "$ns" sd AbleToScale)'"
  fi
  # sh beside hs's HPA, which lifted hs to its minimum of 3: both compared.
  if wait_for 30 hpa_compared "$ns" sh 3; then
    ok "sh (shadow mode) records the HPA beside it: $(jget "$ns" mas sh '{.status.hpaComparison}')"
  else
    fail "sh: no comparison with the HPA (hs replicas $(replicas "$ns" hs), HPA desired $(jget "$ns" hpa hs '{.status.desiredReplicas}'), status $(mas_status_json "$ns" sh | cut -c1-300))"
  fi
  # HPA is the last column but AGE (TARGETS holds a space: count from the end).
  if [[ "$(k get mas sh -n "$ns" -o wide 2>/dev/null | awk 'NR==1{h=$(NF-1)} NR==2{print h, $(NF-1)}')" == "HPA 3" ]]; then
    ok "kubectl get mas -o wide shows the HPA's desired count (3)"
  else
    fail "kubectl get mas -o wide: $(k get mas sh -n "$ns" -o wide 2>&1 | tr '\n' ';')"
  fi
  local series
  series="$(ctl_metrics live | grep -E "^meshscaler_hpa_desired_(replicas|difference)\{namespace=\"$ns\",name=\"sh\"\}")"
  if grep -q '^meshscaler_hpa_desired_replicas{.*} 3$' <<<"$series" &&
     grep -q "^meshscaler_hpa_desired_difference{.*} $(( $(mas_desired "$ns" sh) - 3 ))\$" <<<"$series"; then
    ok "/metrics: the HPA's desired count and the difference ($(tr '\n' ' ' <<<"$series"))"
  else
    fail "/metrics for sh: '$series' (sh desired $(mas_desired "$ns" sh))"
  fi
  local m
  for m in m1 m2; do
    if wait_for 5 cond_is "$ns" "$m" AbleToScale "False ConflictingAutoscaler"; then ok "$m, one of two MeshAutoscalers on dd: AbleToScale False ConflictingAutoscaler"
    else fail "$m, one of two MeshAutoscalers on dd: AbleToScale '$(mas_cond "$ns" "$m" AbleToScale)'"; fi
  done
  if wait_for 5 has_decision "$ns" p3 && wait_for 5 has_decision "$ns" p4; then
    ok "p3 and p4 decide (p3 desired $(mas_desired "$ns" p3) $(mas_reason "$ns" p3), p4 desired $(mas_desired "$ns" p4) $(mas_reason "$ns" p4))"
  else
    fail "p3/p4 report no decision: '$(mas_reason "$ns" p3)' '$(mas_reason "$ns" p4)'"
  fi
  sleep 2
  local what
  declare -A what_of=([p1]="paused" [h1]="beside an HPA" [p3]="paused-scale-out, load asks 6" [p4]="paused-scale-in, load asks 2" [dd]="two MeshAutoscalers")
  for d in p1 h1 p3 p4 dd; do
    what="${what_of[$d]}"
    if [[ "$(generation "$ns" "$d")" == "${gen[$d]}" && "$(replicas "$ns" "$d")" == "${want[$d]}" ]]; then
      ok "$d ($what): the target was never written (generation ${gen[$d]}, replicas ${want[$d]})"
    else
      fail "$d ($what): the target was written: generation ${gen[$d]} -> $(generation "$ns" "$d"), replicas ${want[$d]} -> $(replicas "$ns" "$d")"
    fi
  done

  # Lifting the pause and removing the HPA: both scale.
  k annotate -n "$ns" mas p1 autoscaling.meshscaler.io/paused- >/dev/null
  k delete -n "$ns" hpa h1 >/dev/null
  k delete -n "$ns" mas m2 >/dev/null
  if wait_for 15 is_replicas "$ns" p1 6; then ok "p1 unpaused scales 2 -> 6"
  else fail "p1 unpaused: replicas $(replicas "$ns" p1), reason $(mas_reason "$ns" p1)"; fi
  if wait_for 15 is_replicas "$ns" h1 6 && wait_for 5 cond_is "$ns" h1 AbleToScale True; then ok "HPA deleted: h1 scales 2 -> 6, AbleToScale True"
  else fail "HPA deleted: h1 replicas $(replicas "$ns" h1), AbleToScale '$(mas_cond "$ns" h1 AbleToScale)'"; fi
  if wait_for 15 is_replicas "$ns" dd 6; then ok "m2 deleted: m1 scales dd 2 -> 6"
  else fail "m2 deleted: dd replicas $(replicas "$ns" dd), m1 AbleToScale '$(mas_cond "$ns" m1 AbleToScale)'"; fi
  ctl_stop live
}
