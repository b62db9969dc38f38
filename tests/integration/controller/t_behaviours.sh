# t_behaviours.sh - test 11 (issue 15 item 4): documented behaviours of the
# controller that no other test pinned, each against the real API server so
# that breaking the behaviour fails a check here.
#
#   a. conflict   a 409 on the scale write (a real one: a validating webhook on
#                 deployments/scale changes the Deployment while the write is
#                 in admission, so the API server's optimistic lock refuses it):
#                 the controller re-reads and decides again from the new count
#                 (a Pods-1 rate policy makes the re-decided value differ from
#                 the stale one), never writes the stale decision, and decides
#                 at most 3 times per sync (then FailedRescale, and the next
#                 sync tries again)
#   b. warnonce   a Warning Event (FailedGetScale) once per problem, not every
#                 period; again after the object was healthy in between
#   c. quiet      a live run at rest sends no status PATCH (the API server's own
#                 apiserver_request_total, and the MeshAutoscaler's
#                 resourceVersion) while it keeps deciding every second; a real
#                 change is written (the counter sees it)
#   d. renewal    a leader whose API traffic is black-holed (tests/tools/
#                 faultproxy.py) steps down, and its leader gauge reads 0,
#                 before the other replica takes over (audit log, /metrics, its
#                 log); the times against the renew deadline (10 s) and the
#                 lease (15 s) are printed as figures
#   e. invalid    InvalidSpec (--user-queries=namespaced refusing a query) is
#                 not retried while the spec stays (sync_errors_total, status,
#                 events stand still as a valid neighbour syncs every second);
#                 a spec change is acted on at once; fixed, it scales
#   f. pauseonce  pausing annotations take effect before the next regular
#                 sync (--sync-period 60s; checked within 30 s, the time printed)
#   g. dryleader  --dry-run --leader-elect with rights to create the Lease:
#                 it decides, and no Lease exists and none was ever written
#   h. settle     a saturation correction waits while a pod that turned Ready
#                 inside its rates' window serves (pods marked Ready through the
#                 status subresource, lastTransitionTime 10 minutes ago or now):
#                 corrected, held (ReadyPodsSettling), corrected again a window later
#
# The figures (delays, counts) are printed as notes. MS_BEH_ONLY (names of the
# beh_ functions below, e.g. "quiet conflict") runs only those parts.

beh_metric() { # CTL REGEX : sum of the controller's series matching REGEX (0: none)
  ctl_metrics "$1" | grep -v '^#' | grep -E "$2" | awk '{s += $NF} END {printf "%d\n", s}'
}

# beh_status_patches : PATCH requests on meshautoscalers/status the API server
# has served (every namespace, every code), by the API server's own counter.
beh_status_patches() {
  k get --raw /metrics 2>/dev/null | grep '^apiserver_request_total{' |
    grep 'resource="meshautoscalers"' | grep 'subresource="status"' | grep 'verb="PATCH"' |
    awk '{s += $NF} END {printf "%d\n", s}'
}

# beh_event_count NS MAS REASON : how many times the Warning REASON was
# reported about MAS: the sum of the counts of its core/v1 Events.
beh_event_count() {
  k get events -n "$1" --field-selector "involvedObject.name=$2,involvedObject.kind=MeshAutoscaler,reason=$3" \
    -o 'jsonpath={range .items[*]}{.count}{"\n"}{end}' 2>/dev/null |
    awk '{s += ($1 == "" ? 1 : $1)} END {printf "%d\n", s}'
}
beh_event_count_at_least() { (($(beh_event_count "$1" "$2" "$3") >= $4)); }

beh_cond_msg() { jget "$1" mas "$2" "{.status.conditions[?(@.type==\"$3\")].message}"; }
beh_gt() { (($("${@:2}") > $1)); } # beh_gt N CMD... : CMD prints more than N

# beh_mas NS NAME TARGET QUERY [EXTRA_SPEC_YAML] : a MeshAutoscaler asking
# ceil(QUERY / 10) replicas of Deployment TARGET.
beh_mas() {
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: $2}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: $3}
  minReplicas: 1
  maxReplicas: 20
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: '$4'}
    target: {type: AverageValue, averageValue: "10"}
${5:-}
YAML
}
BEH_Q='sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'

# --- h. a saturation correction waits for pods that just turned Ready ------------

# beh_pod_ready NS POD SECONDS_AGO : mark POD Ready, its lastTransitionTime that many
# seconds ago, through the status subresource (no kubelet ever places these pods).
beh_pod_ready() {
  local when
  when=$(date -u -d "@$(($(date +%s) - $3))" +%Y-%m-%dT%H:%M:%SZ)
  k patch -n "$1" pod "$2" --subresource=status --type=merge \
    -p "{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"lastTransitionTime\":\"$when\"}]}}" >/dev/null
}
beh_is_decision() { # NS MAS "STATUS REASON" DESIRED
  cond_is "$1" "$2" Saturated "$3" && [[ "$(mas_desired "$1" "$2")" == "$4" ]]
}

beh_settle() {
  new_ns bs || { fail "settle: namespace"; return; }
  local ns="$NS" pods t0 took
  deployment "$ns" st 3
  wait_for 20 is_npods "$ns" st 3 || { fail "settle: the Deployment has $(npods "$ns" st) pods, not 3"; return; }
  mapfile -t pods < <(k get pods -n "$ns" -l app=st -o 'jsonpath={range .items[*]}{.metadata.name}{"\n"}{end}')
  beh_pod_ready "$ns" "${pods[0]}" 600 && beh_pod_ready "$ns" "${pods[1]}" 600 ||
    { fail "settle: could not mark pods Ready"; return; }
  # load 10 for a target of 10 (ratio 1), and a proxy refusing as much as it admits
  # (the correction doubles it); the rates' window is 20 s.
  series_set test_admitted "$ns" st 100
  series_set test_rejected "$ns" st 100
  set_and_wait test_load "$ns" st 10 || { fail "settle: series not in Prometheus"; return; }
  k apply -n "$ns" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: st}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: st}
  minReplicas: 1
  maxReplicas: 20
  dryRun: true
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: '$BEH_Q'}
    target: {type: Value, value: "10"}
  guardrails:
    saturation:
    - metric: load
      admittedQuery: 'max_over_time(test_admitted{namespace="{{namespace}}",workload="{{name}}"}[20s])'
      rejectedQuery: 'max_over_time(test_rejected{namespace="{{namespace}}",workload="{{name}}"}[20s])'
YAML
  ctl_start settle "$RESTRICTED" --namespace "$ns" --sync-period 1s || { fail "settle: controller not ready"; return; }
  # Two pods Ready for 10 minutes: corrected, ratio 2, ceil(2 x 2 ready) = 4.
  if wait_for 15 beh_is_decision "$ns" st "True SaturationCorrected" 4; then
    ok "settle: two pods Ready for 10 minutes: the correction applies (desired 4)"
  else fail "settle: with two settled pods: Saturated '$(mas_cond "$ns" st Saturated)', desired $(mas_desired "$ns" st) (want 4)"; return; fi
  t0=$(now)
  beh_pod_ready "$ns" "${pods[2]}" 0
  # The third turns Ready: the ratio was measured on two, so it waits (ratio 1: 3).
  if wait_for 8 beh_is_decision "$ns" st "False ReadyPodsSettling" 3; then
    ok "settle: a pod turned Ready: the correction waits (desired 3, not 6) after $(elapsed "$t0") s: $(beh_cond_msg "$ns" st Saturated)"
  else fail "settle: after a pod turned Ready: Saturated '$(mas_cond "$ns" st Saturated)', desired $(mas_desired "$ns" st) (want ReadyPodsSettling, 3)"; fi
  if [[ "$(jget "$ns" mas st '{.status.lastDecision.message}')" == *"saturation correction waits for load: a pod turned Ready"* ]]; then
    ok "settle: lastDecision.message says why"
  else fail "settle: lastDecision.message: $(jget "$ns" mas st '{.status.lastDecision.message}')"; fi
  # A whole window later the three pods' rates count: ceil(2 x 3) = 6.
  # The direction only (not before the window ended); how long after is a figure.
  if wait_for 90 beh_is_decision "$ns" st "True SaturationCorrected" 6; then
    took="$(elapsed "$t0")"
    if fle 19 "$took"; then ok "settle: the correction applies again $took s after the pod turned Ready (not before the 20 s window ended; desired 6)"
    else fail "settle: the correction came back after $took s, inside the 20 s window"; fi
  else fail "settle: 90 s after: Saturated '$(mas_cond "$ns" st Saturated)', desired $(mas_desired "$ns" st) (want 6)"; fi
  ctl_stop settle
}

# --- c. no status write at rest ---------------------------------------------------

beh_quiet() {
  new_ns bq || { fail "quiet: namespace"; return; }
  local ns="$NS" p0 p1 r0 r1 d0 d1 w0 w1
  deployment "$ns" q 2
  set_and_wait test_load "$ns" q 40 || { fail "quiet: series not in Prometheus"; return; }
  beh_mas "$ns" q q "$BEH_Q"
  ctl_start quiet "$RESTRICTED" --namespace "$ns" --sync-period 1s || { fail "quiet: controller not ready"; return; }
  wait_for 20 is_replicas "$ns" q 4 || { fail "quiet: q never scaled 2 -> 4 ($(mas_reason "$ns" q))"; return; }
  # after the scale the Deployment's status moves for a while, and the status
  # follows it (currentReplicas): wait until the object stands still
  settle_rv "$ns" mas q || note "quiet: the MeshAutoscaler kept changing for 30 s"
  p0="$(beh_status_patches)"; r0="$(rv "$ns" mas q)"
  d0="$(beh_metric quiet '^meshscaler_decisions_total')"
  w0="$(beh_metric quiet '^meshscaler_kube_requests_total\{.*operation="patch_status"')"
  sleep 8
  p1="$(beh_status_patches)"; r1="$(rv "$ns" mas q)"
  d1="$(beh_metric quiet '^meshscaler_decisions_total')"
  w1="$(beh_metric quiet '^meshscaler_kube_requests_total\{.*operation="patch_status"')"
  note "quiet: 8 s at rest: $((d1 - d0)) decisions, API server status PATCHes $p0 -> $p1, resourceVersion $r0 -> $r1, controller patch_status $w0 -> $w1"
  if ((d1 - d0 >= 2)); then ok "quiet: the controller kept deciding at rest ($((d1 - d0)) decisions in 8 s)"
  else fail "quiet: only $((d1 - d0)) decisions in 8 s at --sync-period 1s: the check below proves nothing"; fi
  if [[ -n "$p0" && "$p0" == "$p1" ]]; then ok "quiet: no status PATCH reached the API server in 8 s at rest (apiserver_request_total)"
  else fail "quiet: $((p1 - p0)) status PATCHes reached the API server in 8 s although nothing changed"; fi
  if [[ -n "$r0" && "$r0" == "$r1" ]]; then ok "quiet: the MeshAutoscaler's resourceVersion stood still ($r0)"
  else fail "quiet: the MeshAutoscaler's resourceVersion moved $r0 -> $r1 at rest"; fi
  if [[ "$w0" == "$w1" ]]; then ok "quiet: the controller counted no patch_status request either"
  else fail "quiet: the controller sent $((w1 - w0)) status patches at rest"; fi
  # The counter does see a status write when something changed.
  set_and_wait test_load "$ns" q 60
  if wait_for 15 is_replicas "$ns" q 6 && wait_for 10 beh_gt "$p1" beh_status_patches; then
    ok "quiet: a real change (load 40 -> 60, 4 -> 6) is written: the API server counted $(($(beh_status_patches) - p1)) status PATCH(es)"
  else fail "quiet: after a real change: replicas $(replicas "$ns" q), status PATCHes $p1 -> $(beh_status_patches)"; fi
  ctl_stop quiet
}

# --- f. a pausing annotation takes effect at once ---------------------------------

beh_pause_once() {
  new_ns bp || { fail "pauseonce: namespace"; return; }
  local ns="$NS" t0 took
  deployment "$ns" pz 2
  set_and_wait test_load "$ns" pz 60 || { fail "pauseonce: series not in Prometheus"; return; }
  beh_mas "$ns" pz pz "$BEH_Q"
  ctl_start pause "$RESTRICTED" --namespace "$ns" --sync-period 60s || { fail "pauseonce: controller not ready"; return; }
  wait_for 15 is_replicas "$ns" pz 6 || { fail "pauseonce: the first sync did not scale pz 2 -> 6"; return; }
  sleep 1
  t0=$(now)
  k annotate -n "$ns" mas pz autoscaling.meshscaler.io/paused-replicas=3 >/dev/null
  # The annotation acts at once, not at the next sync 60 s on: 30 s tells the two
  # apart on any machine; the time itself is a figure.
  if wait_for 30 is_replicas "$ns" pz 3; then
    took="$(elapsed "$t0")"
    ok "pauseonce: paused-replicas \"3\" held pz at 3 after $took s, before the next sync (period 60 s)"
  else fail "pauseonce: 30 s after paused-replicas \"3\" pz is still $(replicas "$ns" pz) (sync period 60 s: it waits for the next sync)"; fi
  t0=$(now)
  k annotate -n "$ns" mas pz autoscaling.meshscaler.io/paused-replicas- >/dev/null
  if wait_for 30 is_replicas "$ns" pz 6; then ok "pauseonce: the annotation removed, pz back to 6 after $(elapsed "$t0") s, before the next sync"
  else fail "pauseonce: 30 s after removing paused-replicas pz is $(replicas "$ns" pz)"; fi
  t0=$(now)
  k annotate -n "$ns" mas pz autoscaling.meshscaler.io/paused=true >/dev/null
  if wait_for 30 cond_is "$ns" pz AbleToScale "False Paused"; then ok "pauseonce: paused \"true\": AbleToScale False Paused after $(elapsed "$t0") s, before the next sync"
  else fail "pauseonce: 30 s after paused \"true\": AbleToScale '$(mas_cond "$ns" pz AbleToScale)'"; fi
  ctl_stop pause
}

# --- e. InvalidSpec is not retried until the spec changes -------------------------

beh_invalid() {
  new_ns bi || { fail "invalid: namespace"; return; }
  local ns="$NS" e0 e1 r0 r1 d0 d1 n0 n1 t0
  deployment "$ns" good 1
  deployment "$ns" bad 2
  series_set test_load "$ns" good 30
  series_set test_load "$ns" bad 90
  publish
  prom_wait "test_load{namespace=\"$ns\",workload=\"bad\"} == 90" 15 || { fail "invalid: series not in Prometheus"; return; }
  beh_mas "$ns" good good "$BEH_Q"
  beh_mas "$ns" bad bad 'sum(test_load{workload="bad"})'
  ctl_start inv "$RESTRICTED" --namespace "$ns" --sync-period 1s --user-queries=namespaced ||
    { fail "invalid: controller not ready"; return; }
  wait_for 20 is_replicas "$ns" good 3 || fail "invalid: good never scaled 1 -> 3"
  if wait_for 10 cond_is "$ns" bad ScalingActive "False InvalidSpec" && wait_for 10 has_event "$ns" bad '^Warning InvalidSpec'; then
    ok "invalid: bad is ScalingActive False InvalidSpec with a Warning event"
  else fail "invalid: bad: ScalingActive '$(mas_cond "$ns" bad ScalingActive)', events $(events_for "$ns" bad | tr '\n' ';')"; return; fi
  sleep 1
  e0="$(beh_metric inv '^meshscaler_sync_errors_total\{.*reason="InvalidSpec"')"
  d0="$(beh_metric inv '^meshscaler_decisions_total')"
  r0="$(rv "$ns" mas bad)"; n0="$(beh_event_count "$ns" bad InvalidSpec)"
  sleep 6
  e1="$(beh_metric inv '^meshscaler_sync_errors_total\{.*reason="InvalidSpec"')"
  d1="$(beh_metric inv '^meshscaler_decisions_total')"
  r1="$(rv "$ns" mas bad)"; n1="$(beh_event_count "$ns" bad InvalidSpec)"
  note "invalid: 6 s: InvalidSpec syncs $e0 -> $e1, good's decisions +$((d1 - d0)), bad's resourceVersion $r0 -> $r1, InvalidSpec events $n0 -> $n1"
  if ((d1 - d0 >= 2)); then ok "invalid: the valid neighbour kept syncing meanwhile (+$((d1 - d0)) decisions in 6 s at --sync-period 1s)"
  else fail "invalid: only $((d1 - d0)) decisions in 6 s: the check below proves nothing"; fi
  if [[ "$e0" == 1 && "$e1" == "$e0" ]]; then ok "invalid: bad was synced once and not retried in 6 s at --sync-period 1s (sync_errors_total{reason=\"InvalidSpec\"} stays 1)"
  else fail "invalid: InvalidSpec syncs $e0 -> $e1 in 6 s: the invalid spec is retried every period"; fi
  if [[ "$r0" == "$r1" && "$n0" == 1 && "$n1" == 1 ]]; then ok "invalid: bad's status and its one InvalidSpec event stand still"
  else fail "invalid: bad's resourceVersion $r0 -> $r1, InvalidSpec events $n0 -> $n1"; fi
  # A spec change (still refused) is acted on at once.
  t0=$(now)
  k patch -n "$ns" mas bad --type merge -p '{"spec":{"metrics":[{"name":"load","type":"Prometheus","prometheus":{"query":"max(test_load{workload=\"bad\"})"},"target":{"type":"AverageValue","averageValue":"10"}}]}}' >/dev/null
  if wait_for 30 beh_gt "$e1" beh_metric inv '^meshscaler_sync_errors_total\{.*reason="InvalidSpec"'; then
    ok "invalid: a changed (still refused) spec was synced again after $(elapsed "$t0") s"
  else fail "invalid: 30 s after a spec change bad was not synced again"; fi
  t0=$(now)
  k patch -n "$ns" mas bad --type merge -p '{"spec":{"metrics":[{"name":"load","type":"Prometheus","prometheus":{"query":"sum(test_load{namespace=\"{{namespace}}\",workload=\"{{name}}\"})"},"target":{"type":"AverageValue","averageValue":"10"}}]}}' >/dev/null
  # (the default scale-up policy allows 2 -> 6 at once, 9 only 15 s later)
  if wait_for 10 is_replicas_at_least "$ns" bad 6 && wait_for 5 cond_is "$ns" bad ScalingActive True; then
    ok "invalid: fixed, bad scales 2 -> $(replicas "$ns" bad) after $(elapsed "$t0") s, ScalingActive True"
  else fail "invalid: fixed spec: bad replicas $(replicas "$ns" bad), ScalingActive '$(mas_cond "$ns" bad ScalingActive)'"; fi
  ctl_stop inv
}

# --- b. a Warning once per problem, again after recovery ---------------------------

beh_warn_once() {
  new_ns bw || { fail "warnonce: namespace"; return; }
  local ns="$NS" n
  set_and_wait test_load "$ns" wtarget 30 || { fail "warnonce: series not in Prometheus"; return; }
  beh_mas "$ns" w wtarget "$BEH_Q"
  ctl_start warn "$RESTRICTED" --namespace "$ns" --sync-period 1s || { fail "warnonce: controller not ready"; return; }
  if wait_for 15 beh_event_count_at_least "$ns" w FailedGetScale 1; then ok "warnonce: missing target: a Warning FailedGetScale"
  else fail "warnonce: no FailedGetScale event (events: $(events_for "$ns" w | tr '\n' ';'))"; return; fi
  sleep 6
  n="$(beh_event_count "$ns" w FailedGetScale)"
  if [[ "$n" == 1 ]]; then ok "warnonce: 6 more periods with the same problem: still 1 FailedGetScale (count 1)"
  else fail "warnonce: the same problem was reported $n times in 6 s at --sync-period 1s"; fi
  deployment "$ns" wtarget 2
  if wait_for 15 is_replicas "$ns" wtarget 3 && wait_for 5 cond_is "$ns" w AbleToScale True; then ok "warnonce: the target appears: scaled 2 -> 3, AbleToScale True"
  else fail "warnonce: target created: replicas $(replicas "$ns" wtarget), AbleToScale '$(mas_cond "$ns" w AbleToScale)'"; fi
  sleep 2
  k delete -n "$ns" deployment wtarget --wait=false >/dev/null
  if wait_for 15 beh_event_count_at_least "$ns" w FailedGetScale 2; then ok "warnonce: healthy in between, the target deleted: warned again"
  else fail "warnonce: after healthy -> missing again: FailedGetScale reported $(beh_event_count "$ns" w FailedGetScale) time(s), want 2"; fi
  sleep 5
  n="$(beh_event_count "$ns" w FailedGetScale)"
  if [[ "$n" == 2 ]]; then ok "warnonce: and once only (2 in all after 5 more periods)"
  else fail "warnonce: FailedGetScale reported $n times, want 2"; fi
  ctl_stop warn
}

# --- g. --dry-run --leader-elect writes no lease ---------------------------------------

beh_dry_leader() {
  new_ns bd || { fail "dryleader: namespace"; return; }
  local ns="$NS" id="mse2e-beh-dry-$$" lines writes
  lease_role "$ns" "$id" || { fail "dryleader: the Lease Role"; return; }
  deployment "$ns" dl 2
  set_and_wait test_load "$ns" dl 50 || { fail "dryleader: series not in Prometheus"; return; }
  beh_mas "$ns" dl dl "$BEH_Q"
  ctl_start dry "$RESTRICTED" --namespace "$ns" --sync-period 1s --dry-run --output json \
    --leader-elect --leader-election-id "$id" --leader-election-namespace "$ns" ||
    { fail "dryleader: controller not ready"; return; }
  wait_for 15 beh_gt 2 grep -c '"name":"dl"' "${CTL_OUT[dry]}"
  sleep 5 # more than two retry periods of an elector
  lines="$(grep -c '"name":"dl"' "${CTL_OUT[dry]}")"
  if ((lines >= 3)) && grep -q '"desiredReplicas":5' "${CTL_OUT[dry]}"; then ok "dryleader: it decides ($lines dry-run lines for dl, desired 5)"
  else fail "dryleader: $lines dry-run lines for dl: $(tail -n 1 "${CTL_OUT[dry]}" | cut -c1-200)"; fi
  if ! k get lease -n "$ns" "$id" >/dev/null 2>&1 && [[ -z "$(k get leases -n "$ns" -o name 2>/dev/null)" ]]; then
    ok "dryleader: no Lease in the namespace although the identity may create $id"
  else fail "dryleader: a Lease exists: $(k get leases -n "$ns" -o name | tr '\n' ' ') (holder $(jget "$ns" lease "$id" '{.spec.holderIdentity}'))"; fi
  writes="$(python3 - "$MESHSCALER_E2E_STATE/logs/audit.log" "$ns" <<'PY'
import json, sys
n = 0
for line in open(sys.argv[1]):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    ref = ev.get("objectRef", {})
    if ref.get("resource") == "leases" and ref.get("namespace") == sys.argv[2]:
        n += 1
print(n)
PY
)"
  if [[ "$writes" == 0 ]]; then ok "dryleader: the audit log has no Lease write (of any outcome) in the namespace"
  else fail "dryleader: the audit log has $writes Lease write(s) in $ns"; fi
  if [[ "$(replicas "$ns" dl)" == 2 ]]; then ok "dryleader: the target stays 2"; else fail "dryleader: dl was scaled to $(replicas "$ns" dl)"; fi
  ctl_stop dry
}

# --- a. the 409 loop of a scale write ------------------------------------------------
# A validating admission webhook on deployments/scale (UPDATE), for the test's
# namespace only, acting on the controller's requests only: per Deployment a
# mode file says what to do to the next N requests before allowing them:
#   GEN set N V      set the Deployment's replicas to V (a PATCH of the
#                    Deployment itself, which the webhook does not see)
#   GEN alt N A B    set them to A, or to B when they are A
#   GEN touch N      change an annotation only (same replicas)
#   GEN sleep N MS   answer after MS milliseconds (a slow API server: the
#                    write waits for its admission), then allow
#   GEN deny N       refuse the write (403, "mse2e: denied")
# The change lands while the write is in admission, so the API server's own
# optimistic concurrency refuses the write with 409. Every request it sees is
# logged as a JSON line: time, name, old and new replicas, what it did.

beh_webhook_py() {
  cat <<'PY'
import json, os, ssl, sys, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

cert, key, ca, admin_crt, admin_key, api, modes, log_path, user = sys.argv[1:10]
lock = threading.Lock()
used = {}
log = open(log_path, "a", buffering=1)
client = ssl.create_default_context(cafile=ca)
client.load_cert_chain(admin_crt, admin_key)

def patch(ns, name, body):
    req = urllib.request.Request(f"{api}/apis/apps/v1/namespaces/{ns}/deployments/{name}",
                                 data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Content-Type": "application/merge-patch+json"})
    with urllib.request.urlopen(req, context=client, timeout=5) as r:
        r.read()

class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass
    def do_POST(self):
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        req = review["request"]
        ns, name = req.get("namespace", ""), req.get("name", "")
        old = ((req.get("oldObject") or {}).get("spec") or {}).get("replicas")
        new = ((req.get("object") or {}).get("spec") or {}).get("replicas")
        action = "allow"
        delay = 0
        if req.get("userInfo", {}).get("username") == user and not req.get("dryRun"):
            with lock:
                try:
                    words = open(os.path.join(modes, name)).read().split()
                except OSError:
                    words = []
                if len(words) >= 3 and used.get(name, ("", 0))[0] != words[0]:
                    used[name] = (words[0], 0)
                if len(words) >= 3 and used[name][1] < int(words[2]):
                    used[name] = (words[0], used[name][1] + 1)
                    try:
                        if words[1] == "set":
                            to = int(words[3])
                            patch(ns, name, {"spec": {"replicas": to}})
                            action = f"set:{to}"
                        elif words[1] == "alt":
                            a, b = int(words[3]), int(words[4])
                            to = b if old == a else a
                            patch(ns, name, {"spec": {"replicas": to}})
                            action = f"set:{to}"
                        elif words[1] == "touch":
                            patch(ns, name, {"metadata": {"annotations": {"mse2e/touched": repr(time.time())}}})
                            action = "touch"
                        elif words[1] == "sleep":
                            delay = int(words[3]) / 1000.0
                            action = "sleep"
                        elif words[1] == "deny":
                            action = "deny"
                    except Exception as e:  # the test sees it in the log
                        action = f"error:{e}"
            log.write(json.dumps({"t": time.time(), "name": name, "old": old, "new": new, "action": action}) + "\n")
        time.sleep(delay)
        resp = {"uid": req["uid"], "allowed": action != "deny"}
        if action == "deny":
            resp["status"] = {"code": 403, "message": "mse2e: denied"}
        out = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": resp}
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(f"PORT={srv.server_address[1]}", flush=True)
srv.serve_forever()
PY
}

BEH_WH_NAME=
BEH_MODES=
BEH_WH_LOG=

# beh_webhook_start NS : the webhook server and its configuration; 1 on failure.
beh_webhook_start() {
  local ns="$1" pki="$MESHSCALER_E2E_STATE/pki" dir="$WORK/beh-webhook" port out
  mkdir -p "$dir/modes"
  BEH_MODES="$dir/modes"
  BEH_WH_LOG="$dir/requests.jsonl"
  : >"$BEH_WH_LOG"
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 -keyout "$dir/tls.key" \
    -subj "/CN=mse2e-webhook" -out "$dir/tls.csr" 2>/dev/null &&
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1\n' >"$dir/tls.ext" &&
    openssl x509 -req -in "$dir/tls.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
      -CAserial "$dir/ca.srl" -days 1 -sha256 -extfile "$dir/tls.ext" -out "$dir/tls.crt" 2>/dev/null || return 1
  beh_webhook_py >"$dir/webhook.py"
  . "$MESHSCALER_E2E_STATE/ports.env"
  out="$dir/webhook.out"
  bg "$out" "$dir/webhook.err" python3 "$dir/webhook.py" "$dir/tls.crt" "$dir/tls.key" "$pki/ca.crt" \
    "$pki/admin.crt" "$pki/admin.key" "https://127.0.0.1:$APISERVER_PORT" "$BEH_MODES" "$BEH_WH_LOG" \
    system:serviceaccount:meshscaler-system:meshscaler
  BEH_WH_PID=$LAST_PID
  for _ in $(seq 1 50); do [[ -s "$out" ]] && break; sleep 0.1; done
  port="$(sed -n 's/^PORT=//p' "$out")"
  [[ -n "$port" ]] || return 1
  BEH_WH_NAME="mse2e-beh-409-$$"
  k apply -f - >/dev/null <<YAML || return 1
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: $BEH_WH_NAME}
webhooks:
- name: conflict.mse2e.meshscaler.io
  clientConfig:
    url: https://127.0.0.1:$port/validate
    caBundle: $(base64 -w0 <"$pki/ca.crt")
  rules:
  - apiGroups: ["apps"]
    apiVersions: ["v1"]
    operations: ["UPDATE"]
    resources: ["deployments/scale"]
    scope: Namespaced
  namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
  sideEffects: NoneOnDryRun
  admissionReviewVersions: ["v1"]
  failurePolicy: Ignore
  timeoutSeconds: 5
YAML
}

beh_webhook_stop() {
  [[ -n "$BEH_WH_NAME" ]] && k delete validatingwebhookconfiguration "$BEH_WH_NAME" --ignore-not-found >/dev/null 2>&1
  BEH_WH_NAME=
  [[ -n "${BEH_WH_PID:-}" ]] && stop_pid "$BEH_WH_PID"
  BEH_WH_PID=
}

BEH_MODE_GEN=0
beh_mode() { # NAME WORDS... : the webhook's next mode for Deployment NAME
  BEH_MODE_GEN=$((BEH_MODE_GEN + 1))
  echo "$BEH_MODE_GEN ${*:2}" >"$BEH_MODES/$1.tmp" && mv -f "$BEH_MODES/$1.tmp" "$BEH_MODES/$1"
}

# beh_requests NAME : the webhook's log lines for NAME, one per line as
# "T OLD NEW ACTION".
beh_requests() {
  python3 - "$BEH_WH_LOG" "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["name"] == sys.argv[2]:
        print(f'{r["t"]:.3f} {r["old"]} {r["new"]} {r["action"]}')
PY
}
beh_nrequests_at_least() { (($(beh_requests "$1" | wc -l) >= $2)); }

# beh_bursts NAME : the webhook's requests for NAME grouped into syncs (a gap
# of more than 0.4 s starts a new one: a sync retries at once, the next sync
# comes a second later): one line per sync, "N old>new/action ...".
beh_bursts() {
  beh_requests "$1" | awk '
    { if (NR > 1 && $1 - last > 0.4) { print n line; n = 0; line = "" }
      n++; line = line " " $2 ">" $3 "/" $4; last = $1 }
    END { if (n) print n line }'
}

# beh_audit_puts NS NAME : the scale updates of Deployment NAME by the
# controller's identity in the audit log, as "T CODE" lines.
beh_audit_puts() {
  python3 - "$MESHSCALER_E2E_STATE/logs/audit.log" "$1" "$2" <<'PY'
import json, sys
from datetime import datetime
path, ns, name = sys.argv[1:4]
for line in open(path):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    ref = ev.get("objectRef", {})
    if (ev.get("stage") == "ResponseComplete" and ref.get("namespace") == ns and ref.get("name") == name
            and ref.get("subresource") == "scale" and ev.get("verb") in ("update", "patch")
            and ev.get("user", {}).get("username") == "system:serviceaccount:meshscaler-system:meshscaler"):
        t = datetime.fromisoformat(ev["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
        print(f'{t:.3f} {ev.get("responseStatus", {}).get("code", 0)}')
PY
}

BEH_POLICY='  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 1, periodSeconds: 60}]'

# stdin: beh_bursts lines; exit 1 unless, within each sync, every write
# after the first starts from the count the previous one met and asks one
# more (the Pods-1 policy from that count); a write that the webhook allowed
# but that lost the race with the Deployment controller's own status update
# (a 409 with the same count) is sent again as it was.
BEH_RETRY_CHECK='
import sys
for line in sys.stdin:
    w = line.split()[1:]
    for prev, cur in zip(w, w[1:]):
        p_old, rest = prev.split(">")
        p_new, act = rest.split("/")
        c_old, rest = cur.split(">")
        c_new = rest.split("/")[0]
        if act.startswith("set:"):
            good = c_old == act[4:] and int(c_new) == int(c_old) + 1
        else:
            good = act == "allow" and (c_old, c_new) == (p_old, p_new)
        if not good:
            sys.exit(1)
'

beh_conflict_run() {
  local ns="$1" reqs first rest bursts fr0 fr1 n3 over puts
  # 1. one real conflict: the first write (2 -> 3) finds the Deployment at 6.
  deployment "$ns" cf 2
  series_set test_load "$ns" cf 200
  series_set test_load "$ns" alt 200
  series_set test_load "$ns" tch 200
  publish
  prom_wait "test_load{namespace=\"$ns\",workload=\"tch\"} == 200" 15 || { fail "conflict: series not in Prometheus"; return; }
  beh_mode cf set 1 6
  beh_mas "$ns" cf cf "$BEH_Q" "$BEH_POLICY"
  ctl_start conf "$RESTRICTED" --namespace "$ns" --sync-period 1s || { fail "conflict: controller not ready"; return; }
  if ! wait_for 15 is_replicas "$ns" cf 7; then
    fail "conflict: cf is $(replicas "$ns" cf), want 7 (6 set by the other writer + 1 by the Pods policy); webhook saw: $(beh_requests cf | tr '\n' ';')"
    return
  fi
  hold 3 "$ns" cf 7 || fail "conflict: cf moved from 7: $HOLD_SEEN"
  reqs="$(beh_requests cf)"
  note "conflict: webhook saw (time old new action): $(tr '\n' ';' <<<"$reqs")"
  note "conflict: audit log, the controller's scale writes (time code): $(beh_audit_puts "$ns" cf | tr '\n' ';')"
  first="$(head -n 1 <<<"$reqs" | cut -d' ' -f2-)"
  rest="$(tail -n +2 <<<"$reqs" | cut -d' ' -f2,3 | sort -u | tr '\n' ';')"
  if [[ "$first" == "2 3 set:6" ]]; then ok "conflict: the first write (2 -> 3) met another writer's 6 in admission"
  else fail "conflict: the first write the webhook saw was '$first', want '2 3 set:6'"; fi
  if [[ "$rest" == "6 7;" ]]; then ok "conflict: after the 409 it re-read (6) and decided again from it: every later write was 6 -> 7, never the stale 3"
  else fail "conflict: after the 409 the writes were '$rest', want only '6 7' (re-read 6, decided again under the Pods-1 policy)"; fi
  if [[ "$(beh_audit_puts "$ns" cf | awk '$2 == 409' | wc -l)" -ge 1 ]]; then ok "conflict: the API server answered 409 (audit log)"
  else fail "conflict: no 409 in the audit log for cf"; fi
  fr0="$(beh_metric conf '^meshscaler_sync_errors_total\{.*reason="FailedRescale"')"
  if [[ "$fr0" == 0 ]] && ! has_event "$ns" cf 'FailedRescale'; then ok "conflict: one conflict is no failure (no FailedRescale)"
  else fail "conflict: one conflict counted as a failure: FailedRescale $fr0, events $(events_for "$ns" cf | tr '\n' ';')"; fi

  # 2. someone changes the count at every write: 3 decisions per sync, then
  # FailedRescale; the next sync starts again. 9 conflicts, then the write goes through.
  deployment "$ns" alt 2
  beh_mode alt alt 9 10 14
  beh_mas "$ns" alt alt "$BEH_Q" "$BEH_POLICY"
  if wait_for 25 beh_nrequests_at_least alt 10 && wait_for 10 is_replicas_at_least "$ns" alt 11; then :; else
    fail "conflict: alt: the webhook saw $(beh_requests alt | wc -l) writes, replicas $(replicas "$ns" alt); $(beh_bursts alt | tr '\n' ';')"
    return
  fi
  bursts="$(beh_bursts alt)"
  note "conflict: alt, writes per sync (count old>new/action): $(tr '\n' ';' <<<"$bursts")"
  note "conflict: alt, audit log codes per write: $(beh_audit_puts "$ns" alt | awk '{print $2}' | tr '\n' ' ')"
  # Bursts split by time can merge a sync with its quick retry, so the bound is
  # judged by counting: every sync that ran out of attempts (FailedRescale)
  # made exactly 3 decisions, and the last one, which went through, at most 3.
  local nalt nfail
  nalt="$(beh_requests alt | wc -l)"
  nfail=$(($(beh_metric conf '^meshscaler_sync_errors_total\{.*reason="FailedRescale"') - fr0))
  if ((nfail >= 2 && nalt > 3 * nfail && nalt <= 3 * (nfail + 1))); then
    ok "conflict: a count changed at every write: at most 3 decisions per sync ($nalt writes in $nfail syncs that ran out and 1 that went through)"
  else
    fail "conflict: $nalt writes for $nfail syncs that ran out of attempts and 1 that went through (want 3 per failed sync, at most 3 in the last)"
  fi
  # each write of a sync after its first decided from the count the previous one met
  if python3 -c "$BEH_RETRY_CHECK" <<<"$bursts"; then ok "conflict: each retry decided from the count the previous write met (old = that count, new = old + 1)"
  else fail "conflict: a retry did not decide from what the previous write met: $(tr '\n' ';' <<<"$bursts")"; fi
  fr1="$(beh_metric conf '^meshscaler_sync_errors_total\{.*reason="FailedRescale"')"
  if ((fr1 >= 2)) && wait_for 5 has_event "$ns" alt 'Warning FailedRescale'; then ok "conflict: a sync that ran out of attempts is a FailedRescale ($fr1 syncs, Warning event), and the next sync tried again"
  else fail "conflict: FailedRescale syncs $fr1, events $(events_for "$ns" alt | tr '\n' ';')"; fi

  # 3. same-count conflicts (a status-like change at every write): each decision
  # is written at most 3 times, a sync holds at most 3 decisions (9 PUTs). The
  # bursts below are split by 0.4 s gaps, and a sync that ran out retries
  # within that, so they are printed, not judged; the write must go through.
  deployment "$ns" tch 2
  beh_mode tch touch 12
  beh_mas "$ns" tch tch "$BEH_Q" "$BEH_POLICY"
  wait_for 20 beh_nrequests_at_least tch 13
  wait_for 5 is_replicas "$ns" tch 3
  puts="$(beh_bursts tch | awk '{print $1}' | tr '\n' ' ')"
  note "conflict: same-count 409s at every write (annotation touched): writes per burst: $puts"
  if is_replicas "$ns" tch 3; then ok "conflict: after 12 same-count 409s in a row the write went through (tch 2 -> 3)"
  else fail "conflict: tch is $(replicas "$ns" tch) after 12 same-count 409s, want 3"; fi
  ctl_stop conf
}

beh_conflict() {
  new_ns bc || { fail "conflict: namespace"; return; }
  local ns="$NS"
  beh_webhook_start "$ns" || { fail "conflict: the webhook did not start ($(head -c 300 "$WORK/beh-webhook/webhook.err" 2>/dev/null))"; beh_webhook_stop; return; }
  beh_conflict_run "$ns"
  ctl_stop_all
  beh_webhook_stop
}

# --- d. bounded renewal: a leader that cannot renew steps down in time ---------------

beh_renewal() {
  new_ns br || { fail "renewal: namespace"; return; }
  local ns="$NS" id="mse2e-beh-renew-$$" out line port control h1 t_black t_gauge="" verdict
  lease_role "$ns" "$id" || { fail "renewal: the Lease Role"; return; }
  deployment "$ns" rn 2
  set_and_wait test_load "$ns" rn 30 || { fail "renewal: series not in Prometheus"; return; }
  beh_mas "$ns" rn rn "$BEH_Q"
  . "$MESHSCALER_E2E_STATE/ports.env"
  out="$WORK/beh-proxy.out"
  bg "$out" "$WORK/beh-proxy.err" python3 "$root/tests/tools/faultproxy.py" --listen 127.0.0.1:0 \
    --upstream "127.0.0.1:$APISERVER_PORT" --control 127.0.0.1:0
  local proxy=$LAST_PID
  for _ in $(seq 1 50); do [[ -s "$out" ]] && break; sleep 0.1; done
  line="$(head -n 1 "$out")"
  port="$(sed -n 's/.*LISTEN=\([0-9]*\).*/\1/p' <<<"$line")"
  control="$(sed -n 's/.*CONTROL=\([0-9]*\).*/\1/p' <<<"$line")"
  [[ -n "$port" && -n "$control" ]] || { fail "renewal: the fault proxy did not start ($line)"; return; }
  sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:$port#" "$RESTRICTED" >"$WORK/beh-c1.kubeconfig"
  local flags=(--namespace "$ns" --sync-period 1s --leader-elect --leader-election-id "$id" --leader-election-namespace "$ns")
  ctl_start r1 "$WORK/beh-c1.kubeconfig" "${flags[@]}" || { fail "renewal: c1 not ready"; return; }
  wait_for 20 has_holder "$ns" "$id" || { fail "renewal: c1 never held the Lease"; return; }
  h1="$(lease_holder "$ns" "$id")"
  ctl_start r2 "$RESTRICTED" "${flags[@]}" || { fail "renewal: c2 not ready"; return; }
  wait_for 15 is_replicas "$ns" rn 3 || fail "renewal: c1 does not scale rn 2 -> 3"
  sleep 5 # a few renewals
  [[ "$(leader_gauge r1)" == 1 ]] || fail "renewal: c1's meshscaler_leader is $(leader_gauge r1) before the black-hole"
  t_black=$(now)
  curl -sf --max-time 2 "http://127.0.0.1:$control/mode?set=blackhole" >/dev/null || { fail "renewal: proxy mode"; return; }
  # c1's /metrics is not behind the proxy: watch its gauge turn 0.
  local end
  end=$(python3 -c 'import sys,time; print(time.time()+40)')
  while fle "$(now)" "$end"; do
    if [[ "$(leader_gauge r1)" == 0 ]]; then t_gauge=$(now); break; fi
    sleep 0.1
  done
  wait_for 30 holder_is_not "$ns" "$id" "$h1" || fail "renewal: c2 never took the Lease"
  sleep 1
  verdict="$(python3 - "$MESHSCALER_E2E_STATE/logs/audit.log" "$ns" "$id" "$t_black" "${t_gauge:-0}" "${CTL_ERR[r1]}" <<'PY'
import json, sys
from datetime import datetime
path, ns, lease, t_black, t_gauge, c1_log = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
def ts(s):
    return datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
def who(ev):
    ua = ev.get("userAgent", "")
    return ua[ua.find("(") + 1:ua.rfind(")")] if "(" in ua else ua
writes = []
for line in open(path):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    ref = ev.get("objectRef", {})
    code = ev.get("responseStatus", {}).get("code", 0)
    if (ev.get("stage") == "ResponseComplete" and 200 <= code < 300 and ref.get("namespace") == ns
            and ref.get("resource") == "leases" and ref.get("name") == lease):
        writes.append((ts(ev["requestReceivedTimestamp"]), who(ev)))
writes.sort()
c1 = writes[0][1]
last = max(t for t, w in writes if w == c1 and t < t_black)
c2 = min((t for t, w in writes if w != c1 and t > t_black), default=0)
lost = None
for line in open(c1_log):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    if ev.get("msg") == "lost leadership":
        lost = (ts(ev["ts"]), ev.get("seconds_since_renewal"))
        break
print(f"{last:.3f} {c2:.3f} {lost[0] if lost else 0:.3f} {lost[1] if lost else -1}")
PY
)"
  local t_last t_c2 t_lost since
  read -r t_last t_c2 t_lost since <<<"$verdict"
  if [[ -z "$t_gauge" || "$t_lost" == 0.000 ]]; then
    fail "renewal: c1 never stepped down in 40 s of black-hole (meshscaler_leader $(leader_gauge r1), no \"lost leadership\" log line)"
  else
    local down_after gauge_after c2_after
    down_after=$(python3 -c "print('%.1f' % ($t_lost - $t_last))")
    gauge_after=$(python3 -c "print('%.1f' % ($t_gauge - $t_last))")
    c2_after=$(python3 -c "print('%.1f' % ($t_c2 - $t_last))")
    note "renewal: after c1's last good renewal (audit log): it stepped down at +$down_after s (its log: $since s since renewal), its gauge read 0 at +$gauge_after s, c2 renewed the Lease at +$c2_after s; black-hole at +$(python3 -c "print('%.1f' % ($t_black - $t_last))") s"
    # Orderings, not time bounds: the figures against the 10 s renew deadline and the
    # 15 s lease are in the note above.
    if flt "$down_after" "$c2_after"; then ok "renewal: c1 stepped down (+$down_after s after its last renewal; $since s by its clock, deadline 10 s) before c2 held the Lease (+$c2_after s)"
    else fail "renewal: c1 stepped down at +$down_after s, not before c2 held the Lease (+$c2_after s)"; fi
    if fle "$gauge_after" "$c2_after"; then ok "renewal: c1's meshscaler_leader was 0 (+$gauge_after s) before c2 held the Lease (+$c2_after s)"
    else fail "renewal: c1's meshscaler_leader read 0 at +$gauge_after s, after c2 held the Lease at +$c2_after s"; fi
  fi
  curl -sf --max-time 2 "http://127.0.0.1:$control/mode?set=reset" >/dev/null
  sleep 0.5
  curl -sf --max-time 2 "http://127.0.0.1:$control/mode?set=pass" >/dev/null
  ctl_stop r2
  ctl_stop r1
  stop_pid "$proxy"
}

# MS_BEH_ONLY="quiet conflict" runs only those parts (names of the beh_ functions).
test_behaviours() {
  local t
  for t in ${MS_BEH_ONLY:-quiet pause_once invalid warn_once dry_leader conflict renewal settle}; do
    local s=$SECONDS
    "beh_$t"
    ctl_stop_all
    note "behaviours/$t took $((SECONDS - s)) s"
  done
}
