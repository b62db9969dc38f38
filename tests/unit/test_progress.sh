#!/usr/bin/env bash
# test_progress.sh — e2e/lib/progress.sh, the progress lines of long steps: a line at
# the set interval while a step runs, with the phase, the elapsed time, the expected
# times and the log's last line; none for a step shorter than the interval; the step's
# exit status and output kept; the ticker gone after the step, and gone by itself when
# its shell dies; on a terminal one line updated in place and erased at the end.
# ctest runs it as shell.progress (label unit). One line per check, then
# "N passed, N failed"; exit 1 on a failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/../../e2e/lib/progress.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/test-progress.XXXXXX")"
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # check NAME CMD...
  local name="$1"
  shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# A step of 4.5 s writing a line a second, ticker every 1 s, not on a terminal.
cat >"$work/step.sh" <<EOF
PROGRESS_PREFIX="[t]" PROGRESS_EVERY=1
. "$lib"
step() { for i in 1 2 3 4 5; do echo "line \$i"; sleep 0.9; done; return 3; }
progress_run "doing a step" "~5 s" "~1 s" "$work/step.log" step
echo "rc \$?" >"$work/rc"
PROGRESS_EVERY=4
progress_run "a short step" "~1 s" "~1 s" "$work/short.log" sleep 1
EOF
# (timeout: a ticker that is never stopped would hold progress_stop's wait forever)
timeout 30 bash "$work/step.sh" 2>"$work/out" </dev/null
lines="$(grep -c '^\[t\] still doing a step: [0-9]* s (first run ~5 s, later ~1 s); line [0-9]$' "$work/out")"
check "a line a second while the step runs (got $lines, want 3 or more): $(head -n 1 "$work/out")" \
  test "$lines" -ge 3
check "one line per interval (no two at the same elapsed time)" \
  test -z "$(sed -n 's/^\[t\] still doing a step: \([0-9]*\) s .*/\1/p' "$work/out" | uniq -d)"
check "the line shows the log's last line as it grows" \
  test "$(sed -n 's/.*; //p' "$work/out" | sort -u | wc -l)" -ge 3
check "nothing but progress lines on the stream (the step's output went to the log)" \
  test "$(grep -vc '^\[t\] still ' "$work/out")" -eq 0
check "the step's output is in its log" test "$(cat "$work/step.log")" = "$(printf 'line %d\n' 1 2 3 4 5)"
check "progress_run returns the step's exit status" test "$(cat "$work/rc")" = "rc 3"
# (1 s of 4: the ticker counts whole seconds from a start mid-second and ticks a little
# late each time under load, so a step 1 s short of the interval could see a line)
check "a step shorter than the interval (1 s of 4) prints nothing" test "$(grep -c 'a short step' "$work/out")" -eq 0

# After the step the ticker is gone: no line more.
before="$(wc -l <"$work/out")"
sleep 1.5
check "no line after the step" test "$(wc -l <"$work/out")" -eq "$before"

# A shell killed mid-step (SIGKILL: no trap runs) leaves no ticker behind.
cat >"$work/killed.sh" <<EOF
PROGRESS_PREFIX="[t]" PROGRESS_EVERY=1
. "$lib"
progress_start "a step whose shell dies" "~1 s" "~1 s"
echo "\$PROGRESS_PID" >"$work/ticker.pid"
sleep 30
EOF
bash "$work/killed.sh" 2>/dev/null </dev/null &
shell=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -s "$work/ticker.pid" ]] && break; sleep 0.2; done
ticker="$(cat "$work/ticker.pid" 2>/dev/null)"
{ kill -KILL "$shell"; wait "$shell"; } 2>/dev/null
gone=0
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
  if [[ -n "$ticker" ]] && ! kill -0 "$ticker" 2>/dev/null; then gone=1; break; fi
  sleep 0.2
done
check "the ticker ends by itself within 3 s when its shell is killed" test "$gone" -eq 1
[[ "$gone" -eq 1 || -z "$ticker" ]] || kill "$ticker" 2>/dev/null

# On a terminal (script(1) gives the step one): the line is updated in place (\r, erase
# to the end of the line) and erased when the step ends; progress_clear erases it for a
# message printed during the step.
cat >"$work/tty.sh" <<EOF
PROGRESS_PREFIX="[t]"
. "$lib"
progress_run "a step on a terminal" "~4 s" "~1 s" "$work/tty.log" sleep 4
echo "after the step"
progress_start "a step that says something" "~5 s" "~1 s"
sleep 2.5
progress_clear; echo "a message during the step"
sleep 1
progress_stop
EOF
timeout 30 script -q -e -c "bash $work/tty.sh" "$work/typescript" >/dev/null 2>&1 </dev/null
tty_out="$(tr -d '\n' <"$work/typescript")"
check "on a terminal the line updates in place" grep -qE $'\r\033\\[K\\[t\\] still a step on a terminal: [0-9]+ s' <<<"$tty_out"
check "on a terminal the line is erased at the end" grep -q $'\r\033\\[Kafter the step' <<<"$tty_out"
# Whether the ticker drew a line in the 2.5 s before the message depends on the
# machine's load; the property is that the message starts on an erased line.
check "on a terminal a message during a step starts on a clean line (progress_clear)" \
  grep -q $'\r\033\\[Ka message during the step' <<<"$tty_out"

echo "$passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
