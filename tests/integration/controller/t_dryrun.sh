# t_dryrun.sh - test 2: `meshscaler controller --dry-run` prints the decisions
# the live run then makes, one line per object per sync period, writes nothing,
# and works with an identity that can only read.
#
# Three objects whose decision does not change once the live run applied it,
# so the live status can be compared with the dry-run lines:
#   capped   2 replicas, asks 8, max 5            -> 5 TooManyReplicas
#   limited  2 replicas, asks 8, Pods 3 per 60 s  -> 5 ScaleUpLimit (also
#            proves a scale that was not applied is not stored as a scale event:
#            if it were, the next line would say 2 ScaleUpLimit)
#   steady   3 replicas, asks 3                   -> 3 DesiredWithinRange

# readonly_kubeconfig NS FILE : a ServiceAccount bound to a ClusterRole that
# only reads, and a kubeconfig with its token.
readonly_kubeconfig() {
  local ns="$1" file="$2" role="mse2e-readonly-$$"
  k apply -f - >/dev/null <<YAML || return 1
apiVersion: v1
kind: ServiceAccount
metadata: {name: readonly, namespace: $ns}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: $role}
rules:
- apiGroups: ["autoscaling.meshscaler.io"]
  resources: ["meshautoscalers", "meshautoscalers/status"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["apps"]
  resources: ["deployments", "deployments/scale", "statefulsets", "statefulsets/scale", "replicasets", "replicasets/scale"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods", "events"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["coordination.k8s.io"]
  resources: ["leases"]
  verbs: ["get", "list", "watch"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $role}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: $role}
subjects: [{kind: ServiceAccount, name: readonly, namespace: $ns}]
YAML
  local token server ca
  token="$(k create token readonly -n "$ns" --duration=1h)" || return 1
  server="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.server}')"
  ca="$(k config view --raw --minify -o 'jsonpath={.clusters[0].cluster.certificate-authority-data}')"
  (
    umask 077
    cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: readonly
  user: {token: "$token"}
contexts:
- name: readonly
  context: {cluster: e2e, user: readonly, namespace: $ns}
current-context: readonly
EOF
  )
}

# dry_lines FILE NS : summarize JSON Lines: "name count current->desired reason"
# per object (each distinct decision on its own line), or "BAD <line>".
dry_summary() {
  python3 - "$1" "$2" <<'PY'
import json, sys, collections
seen = collections.OrderedDict()
need = {"time", "currentReplicas", "desiredReplicas", "recommendation", "stabilized", "reason", "metrics", "state"}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line:
        continue
    try:
        o = json.loads(line)
        key = (o["name"], "%s->%s" % (o["currentReplicas"], o["desiredReplicas"]), o["reason"])
        assert o["namespace"] == sys.argv[2] and o.get("target")
        missing = need - set(o)
        assert not missing, "missing %s" % sorted(missing)
    except Exception as e:
        print("BAD", repr(line[:200]), e)
        continue
    seen[key] = seen.get(key, 0) + 1
for (name, cd, reason), n in seen.items():
    print(name, n, cd, reason)
PY
}

# run_for SECONDS NAME KUBECONFIG FLAGS... : a controller for SECONDS, then SIGTERM.
run_for() {
  local secs="$1" name="$2" kc="$3"
  shift 3
  ctl_start "$name" "$kc" "$@" || return 1
  sleep "$secs"
  ctl_stop "$name"
}

test_dryrun() {
  new_ns dry || { fail "dryrun: namespace"; return; }
  local ns="$NS" d
  deployment "$ns" capped 2
  deployment "$ns" limited 2
  deployment "$ns" steady 3
  series_set test_load "$ns" capped 80
  series_set test_load "$ns" limited 80
  series_set test_load "$ns" steady 30
  publish
  prom_wait "test_load{namespace=\"$ns\",workload=\"steady\"} == 30" 15 || { fail "dryrun: series not in Prometheus"; return; }
  mas_apply "$ns" <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: capped}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: capped}
  maxReplicas: 5
$(load_metric)
  behavior:
    scaleUp: {policies: [{type: Pods, value: 10, periodSeconds: 60}]}
---
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: limited}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: limited}
  maxReplicas: 20
$(load_metric)
  behavior:
    scaleUp: {policies: [{type: Pods, value: 3, periodSeconds: 60}]}
---
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: steady}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: steady}
  maxReplicas: 20
$(load_metric)
YAML
  declare -A rv_d=() rv_m=() gen_d=()
  for d in capped limited steady; do
    settle_rv "$ns" deployment "$d" || note "deployment $d still changing"
    rv_d[$d]="$(rv "$ns" deployment "$d")"
    gen_d[$d]="$(generation "$ns" "$d")"
    rv_m[$d]="$(rv "$ns" mas "$d")"
  done

  # --- dry-run with the restricted identity (which could write): writes nothing
  local t0
  t0=$(now)
  run_for 5.5 dry "$RESTRICTED" --namespace "$ns" --sync-period 1s --dry-run --output json ||
    { fail "dryrun: the dry-run controller never got ready"; return; }
  local secs out="${CTL_OUT[dry]}" summary
  secs="$(elapsed "$t0")"
  summary="$(dry_summary "$out" "$ns")"
  note "dry-run decisions in ${secs} s: $(echo "$summary" | tr '\n' ';')"
  if [[ -s "$out" ]] && ! grep -q '^BAD' <<<"$summary"; then ok "dry-run stdout is JSON Lines with decide's fields plus namespace/name/target (logs kept off stdout)"
  else fail "dry-run stdout: $(grep -m2 '^BAD' <<<"$summary"; [[ -s "$out" ]] || echo empty)"; fi
  local want n
  declare -A want_dec=([capped]="2->5 TooManyReplicas" [limited]="2->5 ScaleUpLimit" [steady]="3->3 DesiredWithinRange")
  for d in capped limited steady; do
    want="${want_dec[$d]}"
    if [[ "$(grep "^$d " <<<"$summary" | cut -d' ' -f3-)" == "$want" ]]; then
      ok "dry-run $d: every line $want"
    else
      fail "dry-run $d: want only '$want', got: $(grep "^$d " <<<"$summary" | tr '\n' ';')"
    fi
    n="$(grep "^$d " <<<"$summary" | awk '{s+=$2} END {print s+0}')"
    if ((n >= 3 && n <= 7)); then ok "dry-run $d: $n lines in about 5 s at --sync-period 1s"
    else fail "dry-run $d: $n lines in ${secs} s at --sync-period 1s (want one per second)"; fi
  done
  local wrote=""
  for d in capped limited steady; do
    [[ "$(rv "$ns" deployment "$d")" == "${rv_d[$d]}" ]] || wrote+="deployment/$d rv ${rv_d[$d]}->$(rv "$ns" deployment "$d") "
    [[ "$(generation "$ns" "$d")" == "${gen_d[$d]}" ]] || wrote+="deployment/$d generation "
    [[ "$(rv "$ns" mas "$d")" == "${rv_m[$d]}" ]] || wrote+="mas/$d rv "
    [[ -z "$(mas_status_json "$ns" "$d")" ]] || wrote+="mas/$d status: $(mas_status_json "$ns" "$d" | cut -c1-120) "
    [[ -z "$(events_for "$ns" "$d")" ]] || wrote+="events about $d: $(events_for "$ns" "$d" | tr '\n' ';') "
  done
  if [[ -z "$wrote" ]]; then ok "dry-run wrote nothing (targets' and MeshAutoscalers' resourceVersions, status, events unchanged)"
  else fail "dry-run wrote: $wrote"; fi

  # --- dry-run with an identity that can only read, table output
  local ro="$WORK/readonly.kubeconfig"
  if ! readonly_kubeconfig "$ns" "$ro"; then fail "dryrun: could not make the read-only identity"; return; fi
  if [[ "$(k --kubeconfig "$ro" auth can-i patch deployments.apps --subresource=scale -n "$ns" 2>/dev/null)" == no &&
        "$(k --kubeconfig "$ro" auth can-i create events -n "$ns" 2>/dev/null)" == no ]]; then
    ok "the read-only identity cannot patch a scale or create events"
  else
    fail "the read-only identity can write"
  fi
  if run_for 3.5 ro "$ro" --namespace "$ns" --sync-period 1s --dry-run --output table; then
    local line
    line="$(grep -m1 "$ns/limited" "${CTL_OUT[ro]}")"
    local re="$ns/limited +[^ ]*limited +2 +-> +5 +ScaleUpLimit"
    if [[ "$line" =~ $re ]]; then
      ok "read-only dry-run, table: $(echo "$line" | tr -s ' ' | cut -c1-150)"
    else
      fail "read-only dry-run, table: want 'TIME $ns/limited Deployment/limited 2 -> 5 ScaleUpLimit ...', got '$line' (stdout: $(head -c 300 "${CTL_OUT[ro]}" | tr '\n' ';'))"
    fi
    if grep -qiE 'forbidden|\b403\b' "${CTL_ERR[ro]}"; then
      fail "read-only dry-run logged a refused request: $(grep -m1 -iE 'forbidden|\b403\b' "${CTL_ERR[ro]}" | cut -c1-200)"
    else
      ok "read-only dry-run made no request that needs more than read"
    fi
  else
    fail "dryrun: the read-only dry-run never got ready"
  fi

  # --- the same settings from --config, a flag winning over the file
  cat >"$WORK/controller.yaml" <<EOF
kubeconfig: $RESTRICTED
prometheusUrl: $PROMETHEUS_URL
namespace: $ns
syncPeriod: 1s
dryRun: true
output: table
EOF
  local mp hp
  { read -r mp; read -r hp; } < <(free_ports 2)
  bg "$WORK/config.out" "$WORK/config.err" "$MS" controller --config "$WORK/controller.yaml" --output json \
    --metrics-bind-address "127.0.0.1:$mp" --health-probe-bind-address "127.0.0.1:$hp"
  local cpid=$LAST_PID
  sleep 3
  stop_pid "$cpid"
  if [[ "$STOP_RC" == 0 ]] && [[ "$(dry_summary "$WORK/config.out" "$ns")" == *"limited "[0-9]*" 2->5 ScaleUpLimit"* ]]; then
    ok "--config file (dryRun, namespace, syncPeriod, output table) with --output json winning: JSON lines"
  else
    fail "--config: exit $STOP_RC, stdout $(head -c 200 "$WORK/config.out" | tr '\n' ';') stderr $(head -c 200 "$WORK/config.err" | tr '\n' ';')"
  fi

  # --- the live run makes the same decisions
  ctl_start live "$RESTRICTED" --namespace "$ns" --sync-period 1s ||
    { fail "dryrun: the live controller never got ready"; return; }
  for d in capped limited steady; do
    want="${want_dec[$d]}"
    local want_r="${want#* }" want_n="${want%% *}"
    want_n="${want_n#*->}"
    if wait_for 15 is_replicas "$ns" "$d" "$want_n" && wait_for 5 is_reason "$ns" "$d" "$want_r" && [[ "$(mas_desired "$ns" "$d")" == "$want_n" ]]; then
      ok "live $d: replicas $want_n, lastDecision desired $want_n reason $want_r, as the dry-run said"
    else
      fail "live $d: want $want_n/$want_r as the dry-run said, got replicas $(replicas "$ns" "$d"), lastDecision $(mas_desired "$ns" "$d")/$(mas_reason "$ns" "$d")"
    fi
  done
  ctl_stop live
}
