#!/usr/bin/env bash
# test_check_lib.sh - tests/lib/check.sh, the check helpers of the shell test
# runners: pass and fail count and print their lines, check passes on success
# and fails with the last 3 lines of the command's output, eventually retries
# until the command succeeds and gives up after its seconds. Each helper runs in
# a subshell whose output and counts are compared here, so a broken helper
# cannot count itself as passed. ctest runs it as shell.check_lib (label unit).
# One line per check, then "N passed, N failed"; exit 1 on a failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
lib="$here/../lib/check.sh"
work="$(mktemp -d "${TMPDIR:-/tmp}/test-check-lib.XXXXXX")"
trap 'rm -rf "$work"' EXIT
ours_passed=0
ours_failed=0
expect() { # expect NAME WANT GOT
  if [[ "$2" == "$3" ]]; then
    ours_passed=$((ours_passed + 1)); echo "ok   $1"
  else
    ours_failed=$((ours_failed + 1)); echo "FAIL $1: want $(printf '%q' "$2"), got $(printf '%q' "$3")"
  fi
}
# in_lib SCRIPT: run SCRIPT after sourcing the library in a fresh shell; prints
# its output, then "counts: PASSED FAILED".
in_lib() { bash -c ". '$lib'; $1"$'\n''echo "counts: $passed $failed"' 2>&1; }

expect "pass prints its line and counts" $'ok   - a name\ncounts: 1 0' "$(in_lib 'pass "a name"')"
expect "fail prints its line with the detail and counts" $'FAIL - a name: why\ncounts: 0 1' \
  "$(in_lib 'fail "a name" why')"
expect "fail without a detail" $'FAIL - a name\ncounts: 0 1' "$(in_lib 'fail "a name"')"
expect "counts start from the runner's own" $'ok   - x\ncounts: 3 2' \
  "$(bash -c "passed=2 failed=2; . '$lib'; pass x; echo \"counts: \$passed \$failed\"")"
expect "check passes on success, hiding the output" $'ok   - quiet\ncounts: 1 0' \
  "$(in_lib 'check quiet echo noise')"
expect "check fails with the last 3 lines of the output" \
  $'FAIL - loud: 2 3 4\ncounts: 0 1' "$(in_lib 'check loud sh -c "printf \"1\n2\n3\n4\n\"; exit 3"')"

printf '0' >"$work/n"
bump() { local n; n=$(($(cat "$work/n") + 1)); printf '%s' "$n" >"$work/n"; [[ $n -ge 3 ]]; }
export -f bump
export work
expect "eventually retries until the command succeeds" $'0\n3' \
  "$(CHECK_POLL=0.05 bash -c ". '$lib'; eventually 5 bump; echo \$?; cat '$work/n'")"
start=$SECONDS
expect "eventually gives up after its seconds with 1" "1" \
  "$(CHECK_POLL=0.2 bash -c ". '$lib'; eventually 1 false; echo \$?")"
expect "eventually gave up within 3 s" "yes" "$( ((SECONDS - start <= 3)) && echo yes || echo no)"

passed=$ours_passed
failed=$ours_failed
echo "$passed passed, $failed failed"
[[ "$failed" -eq 0 ]]
