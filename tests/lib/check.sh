# shellcheck shell=bash
# tests/lib/check.sh - the one set of check helpers of the shell test runners.
# Source it after setting nothing: it counts into $passed and $failed (0 unless
# already set), and the runner ends with `echo "$passed passed, $failed failed"`.
#
#   pass NAME              a passed check: "ok   - NAME"
#   fail NAME [DETAIL]     a failed one:   "FAIL - NAME: DETAIL"
#   check NAME CMD...      pass NAME when CMD succeeds, else fail NAME with the
#                          last 3 lines of CMD's output (stdout and stderr)
#   eventually SECS CMD... run CMD until it succeeds, every $CHECK_POLL seconds
#                          (default 1); returns 1 once SECS have passed
#
# tests/unit/test_check_lib.sh checks these (ctest shell.check_lib).
passed=${passed:-0}
failed=${failed:-0}

pass() { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }

check() {
  local name="$1" out
  shift
  if out="$("$@" 2>&1)"; then pass "$name"; else fail "$name" "$(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"; fi
}

eventually() {
  local secs="$1" deadline
  shift
  deadline=$((SECONDS + secs))
  until "$@"; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep "${CHECK_POLL:-1}"
  done
}
