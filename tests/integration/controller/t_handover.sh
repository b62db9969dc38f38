# t_handover.sh - the switch from an HPA to meshscaler (docs/migration.md,
# step 4) with the real HPA controller of kube-controller-manager acting:
#   - the HPA lifts Deployment ho from 1 to its minimum of 3 (it needs no
#     metrics for that) while MeshAutoscaler ho runs beside it in shadow mode,
#     asking 3 too (load 30): compared, nothing written by meshscaler;
#   - hand-over: the HPA deleted, then spec.dryRun false: meshscaler takes
#     over from 3 with no jump (no write for 6 s: generation unchanged);
#   - the load rises to 60: meshscaler scales 3 -> 6, within its policies.

test_handover() {
  new_ns handover || { fail "handover: namespace"; return; }
  local ns="$NS" gen
  deployment "$ns" ho 1
  series_set test_load "$ns" ho 30
  publish
  hpa_to ho 3 3 | k apply -n "$ns" -f - >/dev/null
  mas_to ho apps/v1 Deployment ho | sed 's/^  maxReplicas: 10/  maxReplicas: 10\n  dryRun: true/' |
    mas_apply "$ns" || { fail "handover: objects refused"; return; }
  prom_wait "test_load{namespace=\"$ns\",workload=\"ho\"} == 30" 15
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "handover: the controller never got ready"; return; }

  if wait_for 40 is_replicas "$ns" ho 3 && wait_for 20 hpa_compared "$ns" ho 3; then
    ok "shadow mode: the HPA lifted ho 1 -> 3; meshscaler beside it: $(jget "$ns" mas ho '{.status.hpaComparison}')"
  else
    fail "shadow mode: ho replicas $(replicas "$ns" ho), comparison '$(jget "$ns" mas ho '{.status.hpaComparison}')'"
  fi
  k delete -n "$ns" hpa ho >/dev/null
  gen="$(generation "$ns" ho)"
  k patch -n "$ns" mas ho --type merge -p '{"spec":{"dryRun":false}}' >/dev/null
  if wait_for 10 cond_is "$ns" ho DryRun False && hold 6 "$ns" ho 3 &&
     [[ "$(generation "$ns" ho)" == "$gen" ]]; then
    ok "hand-over: meshscaler took over at 3 and wrote nothing for 6 s (generation $gen, $(mas_reason "$ns" ho))"
  else
    fail "hand-over: replicas $(replicas "$ns" ho) ($HOLD_SEEN), generation $gen -> $(generation "$ns" ho), DryRun '$(mas_cond "$ns" ho DryRun)'"
  fi
  set_and_wait test_load "$ns" ho 60
  if wait_for 15 is_replicas "$ns" ho 6; then
    ok "after the hand-over meshscaler scales: load 60 takes ho 3 -> 6"
  else
    fail "after the hand-over: load 60, ho replicas $(replicas "$ns" ho), $(mas_reason "$ns" ho)"
  fi
  ctl_stop live
}
