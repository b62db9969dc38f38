# t_failover.sh - test 7: one writer, always. Two controllers elect a leader;
# the leader (c1) reaches the API server only through a fault proxy
# (tests/tools/faultproxy.py). While the load keeps rising (a scale write
# every second or two), the proxy first adds latency, then black-holes c1's
# traffic: c1 must stop writing before its lease can pass, c2 must take over
# and scale on. Then the proxy resets (c1's frozen requests are dropped, as a
# partition that kills the connections would) and passes again: c1 comes back
# as a follower.
#
# The API server's audit log (e2e/local records every scale and Lease write
# with the user agent, which names each controller's identity) is the judge:
# every scale write must come from the identity whose last Lease write before
# it is at most one lease duration old and not followed by another identity's
# Lease write, and the writers' terms must not interleave.
#
# Figures: time from black-hole to c2 holding the Lease, and the time with no
# writer (c1's last scale write to c2's first).

failover_fixture() { # NS ID
  k apply -n "$1" -f - >/dev/null <<YAML
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: fo}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: fo}
  minReplicas: 2
  maxReplicas: 200
  metrics:
  - name: load
    type: Prometheus
    prometheus: {query: 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'}
    target: {type: AverageValue, averageValue: "10"}
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      policies: [{type: Pods, value: 100, periodSeconds: 1}]
YAML
}

# proxy_mode MODE [ARGS] : tell the fault proxy.
proxy_mode() { curl -sf --max-time 2 "http://127.0.0.1:$FO_CONTROL/mode?set=$1${2:+&$2}" >/dev/null; }

# A background writer of rising load: load 10 * (start + i) every 1.5 s, so the
# leader scales up by one replica at each step.
load_riser() { # NS START
  local i=0
  while :; do
    series_set test_load "$1" fo $(( (${2} + i) * 10 ))
    publish
    i=$((i + 1))
    sleep 1.5
  done
}

test_failover() {
  new_ns failover || { fail "failover: namespace"; return; }
  local ns="$NS" id="mse2e-fo-$$" port out line t0 t_black
  lease_role "$ns" "$id" || { fail "failover: the Lease Role"; return; }
  deployment "$ns" fo 2
  set_and_wait test_load "$ns" fo 20 || fail "failover: series not in Prometheus"
  failover_fixture "$ns"

  # The fault proxy in front of the API server, for c1 only.
  . "$MESHSCALER_E2E_STATE/ports.env"
  out="$WORK/faultproxy.out"
  bg "$out" "$WORK/faultproxy.err" python3 "$root/tests/tools/faultproxy.py" --listen 127.0.0.1:0 \
    --upstream "127.0.0.1:$APISERVER_PORT" --control 127.0.0.1:0
  for _ in $(seq 1 50); do [[ -s "$out" ]] && break; sleep 0.1; done
  line="$(head -n 1 "$out")"
  port="$(sed -n 's/.*LISTEN=\([0-9]*\).*/\1/p' <<<"$line")"
  FO_CONTROL="$(sed -n 's/.*CONTROL=\([0-9]*\).*/\1/p' <<<"$line")"
  [[ -n "$port" && -n "$FO_CONTROL" ]] || { fail "failover: the fault proxy did not start ($line)"; return; }
  sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:$port#" "$RESTRICTED" >"$WORK/c1.kubeconfig"

  local flags=(--namespace "$ns" --sync-period 1s --leader-elect --leader-election-id "$id"
    --leader-election-namespace "$ns")
  ctl_start c1 "$WORK/c1.kubeconfig" "${flags[@]}" || { fail "failover: c1 never got ready"; return; }
  if wait_for 20 has_holder "$ns" "$id"; then ok "c1 holds the Lease (through the fault proxy)"
  else fail "failover: no holder 20 s after c1 started"; return; fi
  local h1
  h1="$(lease_holder "$ns" "$id")"
  ctl_start c2 "$RESTRICTED" "${flags[@]}" || { fail "failover: c2 never got ready"; return; }

  load_riser "$ns" 3 >/dev/null 2>&1 &
  local riser=$!
  E2E_PIDS+=("$riser")
  if wait_for 15 is_replicas_at_least "$ns" fo 5; then ok "c1 scales under rising load (replicas $(replicas "$ns" fo))"
  else fail "failover: c1 does not scale (replicas $(replicas "$ns" fo), reason $(mas_reason "$ns" fo))"; fi

  # Slow first: 300 ms each way is a slow network, not a lost one; c1 keeps the lease.
  proxy_mode latency ms=300
  sleep 6
  if [[ "$(lease_holder "$ns" "$id")" == "$h1" ]]; then ok "with 300 ms of latency c1 keeps the Lease"
  else fail "failover: c1 lost the Lease to 300 ms of latency (holder $(lease_holder "$ns" "$id"))"; fi

  # Then black-holed: nothing reaches the API server, nothing comes back.
  t_black=$(now)
  proxy_mode blackhole
  if wait_for 40 holder_is_not "$ns" "$id" "$h1"; then
    FO_HANDOVER="$(elapsed "$t_black")"
    ok "c2 holds the Lease $FO_HANDOVER s after c1's traffic was black-holed"
  else
    fail "failover: the Lease still names $(lease_holder "$ns" "$id") 40 s after the black-hole"
  fi
  local r0
  r0="$(replicas "$ns" fo)"
  if wait_for 15 is_replicas_at_least "$ns" fo $((r0 + 2)); then ok "c2 scales on ($r0 -> $(replicas "$ns" fo))"
  else fail "failover: c2 does not scale (replicas $(replicas "$ns" fo))"; fi
  if [[ "$(leader_gauge c1)" == 0 ]]; then ok "c1 knows it is not the leader (meshscaler_leader 0)"
  else fail "failover: c1's meshscaler_leader is $(leader_gauge c1) while black-holed"; fi

  # The partition ends the way a real one does: the connections are gone.
  proxy_mode reset
  sleep 1
  proxy_mode pass
  sleep 8
  if [[ "$(lease_holder "$ns" "$id")" != "$h1" ]]; then ok "after the partition c1 stays a follower"
  else fail "failover: c1 took the Lease back"; fi
  kill "$riser" 2>/dev/null
  sleep 2

  # The judge: the audit log.
  local verdict
  verdict="$(python3 - "$MESHSCALER_E2E_STATE/logs/audit.log" "$ns" "$id" 15 <<'PY'
import json, sys
from datetime import datetime
path, ns, lease, duration = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
def ts(s):
    s = s.rstrip("Z")
    if "." in s:
        a, b = s.split(".")
        s = a + "." + (b + "000000")[:6]
        return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%f").timestamp()
    return datetime.strptime(s, "%Y-%m-%dT%H:%M:%S").timestamp()
def who(ev):
    ua = ev.get("userAgent", "")
    return ua[ua.find("(") + 1:ua.rfind(")")] if "(" in ua else ua
leases, scales = [], []
for line in open(path):
    try:
        ev = json.loads(line)
    except ValueError:
        continue
    ref = ev.get("objectRef", {})
    code = ev.get("responseStatus", {}).get("code", 0)
    if ev.get("stage") != "ResponseComplete" or not (200 <= code < 300) or ref.get("namespace") != ns:
        continue
    t = ts(ev["requestReceivedTimestamp"])
    if ref.get("resource") == "leases" and ref.get("name") == lease and ev.get("verb") in ("create", "update", "patch"):
        leases.append((t, who(ev)))
    elif ref.get("resource") == "deployments" and ref.get("subresource") == "scale" and ev.get("verb") in ("update", "patch"):
        scales.append((t, who(ev)))
leases.sort(); scales.sort()
bad = []
for t, w in scales:
    before = [(lt, lw) for lt, lw in leases if lt <= t]
    if not before:
        bad.append(f"{w} wrote scale at {t:.2f} before any Lease write"); continue
    lt, lw = before[-1]
    if lw != w:
        bad.append(f"{w} wrote scale at {t:.2f} while {lw} held the Lease (since {lt:.2f})")
    elif t - lt > duration:
        bad.append(f"{w} wrote scale at {t:.2f}, {t - lt:.1f} s after its last Lease write")
writers = [w for _, w in scales]
switches = sum(1 for a, b in zip(writers, writers[1:]) if a != b)
gap = 0.0
for (ta, wa), (tb, wb) in zip(scales, scales[1:]):
    if wa != wb:
        gap = max(gap, tb - ta)
print(f"{len(scales)} {len(set(writers))} {switches} {gap:.1f} {len(bad)}")
for b in bad[:5]:
    print(b)
PY
)"
  local nscales nwriters switches gap nbad
  read -r nscales nwriters switches gap nbad <<<"$(head -n 1 <<<"$verdict")"
  note "audit log: $nscales scale writes by $nwriters identities, $switches hand-over(s); no writer for $gap s at the hand-over (black-hole to c2 holding the Lease: ${FO_HANDOVER:-?} s)"
  if [[ "$nbad" == 0 && "$nwriters" == 2 && "$switches" == 1 ]]; then
    ok "audit log: every scale write came from the Lease holder of its term; the two terms never overlap"
  else
    fail "audit log: ${nbad:-?} writes outside their writer's term, $nwriters writers, $switches switches: $(tail -n +2 <<<"$verdict" | tr '\n' ';')"
  fi
  ctl_stop c2
  ctl_stop c1
}
