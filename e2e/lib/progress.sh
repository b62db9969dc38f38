# shellcheck shell=bash
# e2e/lib/progress.sh — progress lines for long steps, sourced by e2e/local,
# e2e/lab/run.sh, e2e/smoke.sh, scripts/test.sh and tests/chart/run.sh.
#
# A long step (a first build, a package install, a cluster start) runs with its output
# in a log file. While it runs, a ticker says what it does, for how long so far, how
# long it takes on a first run and on later runs, and where it is:
#
#   [e2e] still compiling the control plane: 2 min 15 s (first run ~11-22 min, later cached); packages compiled 1200 of ~2861
#
# On a terminal the line updates in place every 2 s and is erased when the step ends;
# otherwise (a log, CI) a plain line every PROGRESS_EVERY seconds (15), none for a step
# that ends sooner: a warm run, whose steps are short, prints no more than before. 15 s,
# so that two steps in a row, each just too short for a line, still leave no gap of
# more than 30 s.
#
# The caller sets PROGRESS_PREFIX (default "[e2e]") and PROGRESS_FD, the stream its own
# messages go to (default 2). One ticker at a time per shell.

PROGRESS_PREFIX="${PROGRESS_PREFIX:-[e2e]}"
PROGRESS_FD="${PROGRESS_FD:-2}"
PROGRESS_EVERY="${PROGRESS_EVERY:-15}"
PROGRESS_PID=""

# progress_secs N: "45 s" or "2 min 20 s".
progress_secs() {
  if [ "$1" -lt 120 ]; then printf '%d s' "$1"; else printf '%d min %d s' $(($1 / 60)) $(($1 % 60)); fi
}

# progress_tail FILE: the last non-empty line of FILE without a leading "[word]" tag,
# at most 200 characters (nothing when FILE is empty or absent).
progress_tail() {
  [ -s "$1" ] || return 0
  tail -n 5 "$1" 2>/dev/null | tr -d '\r' | sed -e '/^[[:space:]]*$/d' | tail -n 1 \
    | sed -e 's/^\[[A-Za-z0-9_-]*\] *//' -e 's/^[[:space:]]*//' | cut -c1-200
}

# progress_start PHASE FIRST LATER [STATUS-CMD...]: start the ticker for PHASE
# ("compiling the control plane"); FIRST and LATER are what the phase takes on a first
# run and on later runs ("~11 min", "cached", "nothing to do"); STATUS-CMD, run at each
# line, prints where the step is (one line; a shell function is fine). Stops a ticker
# that still runs.
progress_start() {
  progress_stop
  local phase="$1" first="$2" later="$3" fd="$PROGRESS_FD" every="$PROGRESS_EVERY" tty=0
  local parent="$BASHPID"
  shift 3
  if [ -t "$fd" ]; then tty=1; every=2; fi
  (
    # The ticker never runs the caller's traps; TERM (progress_stop) ends it at once.
    trap - EXIT INT
    sp=""
    trap '[ -z "$sp" ] || kill "$sp" 2>/dev/null; exit 0' TERM
    start=$SECONDS next=$((SECONDS + every)) cols=0
    [ "$tty" -eq 0 ] || cols="$(tput cols 2>/dev/null || echo 100)"
    # It ends by itself when the shell that started it is gone (killed, or exited early).
    while kill -0 "$parent" 2>/dev/null; do
      sleep 1 & sp=$!
      wait "$sp" 2>/dev/null
      sp=""
      [ "$SECONDS" -ge "$next" ] || continue
      next=$((next + every))
      status="$([ $# -eq 0 ] || "$@" 2>/dev/null || true)"
      line="$PROGRESS_PREFIX still $phase: $(progress_secs $((SECONDS - start))) (first run $first, later $later)${status:+; $status}"
      if [ "$tty" -eq 1 ]; then
        printf '\r\033[K%s' "${line:0:$((cols - 1))}" >&"$fd"
      else
        printf '%s\n' "$line" >&"$fd"
      fi
    done
  ) &
  PROGRESS_PID=$!
}

# progress_stop: end the ticker (if one runs) and erase its line on a terminal.
progress_stop() {
  [ -n "$PROGRESS_PID" ] || return 0
  kill -TERM "$PROGRESS_PID" 2>/dev/null || true
  wait "$PROGRESS_PID" 2>/dev/null || true
  PROGRESS_PID=""
  if [ -t "$PROGRESS_FD" ]; then printf '\r\033[K' >&"$PROGRESS_FD"; fi
  return 0
}

# progress_clear: on a terminal, while a ticker runs, erase its line, so that a message
# printed during the step starts on a clean line (the ticker redraws at its next tick).
progress_clear() {
  if [ -n "$PROGRESS_PID" ] && [ -t "$PROGRESS_FD" ]; then printf '\r\033[K' >&"$PROGRESS_FD"; fi
  return 0
}

# progress_run PHASE FIRST LATER LOG CMD...: run CMD with its output appended to LOG,
# the ticker showing LOG's last line; returns CMD's exit status.
progress_run() {
  local phase="$1" first="$2" later="$3" log="$4" rc=0
  shift 4
  progress_start "$phase" "$first" "$later" progress_tail "$log"
  "$@" >>"$log" 2>&1 || rc=$?
  progress_stop
  return "$rc"
}
