# t_liveness.sh - test 10: /healthz fails when the controller is wedged (the
# hardening issue's "Liveness that can fail"), with a wedge that happens in
# production: the reader of the container's stdout/stderr (the runtime's
# shim, a log agent) stops reading, the pipe fills, and every thread that
# writes a line blocks in write(2).
#
# A dry-run controller (it prints a line per object per sync, so it writes
# all the time) runs with stdout and stderr on one pipe whose reader this
# test stops with SIGSTOP after the first lines; the pipe is 4 KiB (the
# reader sets F_SETPIPE_SZ) so it fills in about a second. Checks:
#   - before the stall /healthz answers 200;
#   - while stalled, /healthz turns 503 after no progress for the documented
#     bound (3 sync periods, at least 60 s; docs/controller.md) and not much
#     later; /readyz stays 200 (a wedged process is not "not ready", it is
#     dead, and liveness is what restarts it);
#   - the reader resumes (SIGCONT): the lines written during the stall are
#     intact JSON, decisions resume, and /healthz is 200 again.
LV_FLOOR=60    # LIVENESS_FLOOR of src/controller/controller.c, seconds
LV_SLACK=8     # /healthz may turn this much after the floor

lv_status() { # PORT PATH -> HTTP status, 000 when no answer in 2 s
  curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$1$2"
}

test_liveness() {
  new_ns live || { fail "liveness: namespace"; return; }
  local ns="$NS" d
  for d in a b c; do
    deployment "$ns" "$d" 2
    series_set test_load "$ns" "$d" 30
  done
  publish
  prom_wait "test_load{namespace=\"$ns\",workload=\"c\"} == 30" 15 || { fail "liveness: series not in Prometheus"; return; }
  for d in a b c; do
    mas_to "$d" apps/v1 Deployment "$d"
    echo ---
  done | mas_apply "$ns"

  local fifo="$WORK/liveness.fifo" out="$WORK/liveness.out" reader_pid pid mport hport
  mkfifo "$fifo" || { fail "liveness: mkfifo"; return; }
  # The reader: a 4 KiB pipe, copied line by line to a file.
  python3 -c 'import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
try:
    fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ
except OSError:
    pass
with open(sys.argv[2], "wb", buffering=0) as out:
    while True:
        b = os.read(fd, 512)
        if not b:
            break
        out.write(b)' "$fifo" "$out" &
  reader_pid=$!
  E2E_PIDS+=("$reader_pid")
  { read -r mport; read -r hport; } < <(free_ports 2)
  "$MS" controller --kubeconfig "$KUBECONFIG" --prometheus-url "$PROMETHEUS_URL" \
    --metrics-bind-address "127.0.0.1:$mport" --health-probe-bind-address "127.0.0.1:$hport" \
    --log-format json --namespace "$ns" --sync-period 1s --dry-run --output json \
    >"$fifo" 2>&1 </dev/null &
  pid=$!
  E2E_PIDS+=("$pid")
  wait_for 30 bash -c "[[ \$(curl -s -o /dev/null -w '%{http_code}' --max-time 1 http://127.0.0.1:$hport/readyz) == 200 ]]" ||
    { fail "liveness: the controller never got ready"; stop_pid "$pid" KILL; stop_pid "$reader_pid" KILL; return; }
  wait_for 10 bash -c "[[ \$(grep -c '\"desiredReplicas\"' '$out') -ge 6 ]]" || note "few decisions before the stall"
  if [[ "$(lv_status "$hport" /healthz)" == 200 ]]; then ok "liveness: /healthz 200 while decisions flow"
  else fail "liveness: /healthz $(lv_status "$hport" /healthz) before the stall"; fi

  # --- the stall
  kill -STOP "$reader_pid"
  local t0 lines0 turned="" code i
  t0=$(now)
  sleep 3
  lines0="$(wc -l <"$out")"
  for ((i = 0; i < LV_FLOOR + LV_SLACK + 10; i++)); do
    code="$(lv_status "$hport" /healthz)"
    if [[ "$code" == 503 ]]; then turned="$(elapsed "$t0")"; break; fi
    sleep 1
  done
  if [[ -z "$turned" ]]; then
    fail "liveness: /healthz still $code $(elapsed "$t0") s into the stall (want 503 after about $LV_FLOOR s)"
  elif fle "$((LV_FLOOR - 5))" "$turned" && fle "$turned" "$((LV_FLOOR + LV_SLACK))"; then
    ok "liveness: /healthz 503 ${turned} s after stdout stopped being read (bound: no progress for $LV_FLOOR s)"
  else
    fail "liveness: /healthz 503 after ${turned} s of the stall (want $LV_FLOOR..$((LV_FLOOR + LV_SLACK)) s)"
  fi
  note "figure: wedged controller (stdout pipe stalled): /healthz 503 after ${turned:-never} s"
  if [[ "$(wc -l <"$out")" == "$lines0" ]]; then ok "liveness: the stall was real (no line reached the reader)"
  else fail "liveness: lines reached the reader during the stall"; fi
  code="$(lv_status "$hport" /readyz)"
  if [[ "$code" == 200 ]]; then ok "liveness: /readyz stays 200 while wedged"
  else fail "liveness: /readyz $code while wedged"; fi

  # --- the reader resumes
  kill -CONT "$reader_pid"
  local n0 back=""
  n0="$(grep -c '"desiredReplicas"' "$out")"
  t0=$(now)
  for ((i = 0; i < 20; i++)); do
    if [[ "$(lv_status "$hport" /healthz)" == 200 ]]; then back="$(elapsed "$t0")"; break; fi
    sleep 0.5
  done
  if [[ -n "$back" ]]; then ok "liveness: /healthz 200 again ${back} s after the pipe drains"
  else fail "liveness: /healthz still failing 10 s after the pipe drains"; fi
  sleep 3
  if (($(grep -c '"desiredReplicas"' "$out") > n0)); then ok "liveness: decisions resume"
  else fail "liveness: no decision after the pipe drains"; fi
  stop_pid "$pid" TERM 2>/dev/null
  if [[ "$STOP_RC" == 0 ]]; then ok "liveness: exit 0 on SIGTERM after the stall"
  else fail "liveness: exit $STOP_RC on SIGTERM after the stall"; fi
  stop_pid "$reader_pid" TERM 2>/dev/null
  local bad
  bad="$(python3 - "$out" <<'PY'
import json, sys
bad = 0
for line in open(sys.argv[1], "rb"):
    try:
        json.loads(line)
    except Exception:
        bad += 1
print(bad)
PY
)"
  if [[ "$bad" == 0 ]]; then ok "liveness: every line written across the stall is whole JSON"
  else fail "liveness: $bad lines are not JSON (torn by the stall?)"; fi
  if grep -q 'no progress while objects are due' "$out"; then ok "liveness: the log says why /healthz failed"
  else fail "liveness: no log line about the failing /healthz"; fi
  if sanitizer_clean "$out"; then :; else fail "liveness: sanitizer report in $out"; fi
}
