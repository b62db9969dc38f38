#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, and runs every
# suite. CI runs exactly this (through .ci/run) on a clean clone.
#
# Suites, each reported as it ends:
#   unit+scenarios  cmocka unit tests, every decide scenario and the CLI,
#                   built with ASan + UBSan (ctest)
#   valgrind        the decide command and the unit tests under valgrind
#   load-client     the lab's load client against a real HAProxy on this host
#                   (e2e/lab/load/check.sh; needs no cluster, so it runs here,
#                   not in the lab suite)
#   fuzz            each libFuzzer target for FUZZ_SECONDS (default 30)
#   bench           bench/engine, bench/budget and bench/scrape_fetch (direct reads
#                   of 16 and 100 real HAProxy exporters) figures (printed, not asserted)
#   chart           the Helm chart: lint, templates, schema refusals, manifests
#                   rendered from it, dashboard and alert series (tests/chart)
#   e2e-smoke       the local one-node cluster (control plane, node, metrics-server,
#                   a CPU HPA), Prometheus and HAProxy (e2e/)
#   integration     against one shared environment from e2e/local: the CRD, the
#                   clients, the controller, the image (Docker) and the chart
#                   installed in-cluster: every tests/integration/*/run.sh
#   lab             the incident lab's scenarios, shortened (e2e/lab/*.sh --short), each
#                   on real pods, two arms side by side under the same peak:
#                   blind-vs-aware (the HPA on CPU and meshscaler, a dry-run meshscaler
#                   beside the HPA), retry-storm (without and with the retry-storm
#                   guard), edge-flows (without and with the downstream guardrail; then
#                   slow-start, the guardrail without and with the starting-pod
#                   reservation) and
#                   shared-edge (two services behind one balancer: own guardrails, then
#                   one shared budget); asserts directions.
# Set MS_SKIP="fuzz e2e-smoke" to skip suites while iterating locally.
# Under CI=true nothing may be skipped: a suite in MS_SKIP, a ctest test that
# skips, or an integration runner that exits 77 fails the run instead. The
# summary counts skipped suites and tests either way.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
# Progress lines for long steps, on this script's stream (e2e/lib/progress.sh).
PROGRESS_PREFIX="[test]" PROGRESS_FD=1
# shellcheck source=e2e/lib/progress.sh
. e2e/lib/progress.sh
jobs="$(nproc 2>/dev/null || echo 2)"
passed=0
failed=0
skipped=0
failed_names=()
skip_log="$(mktemp)" # one line per skipped test (suites run in subshells too)
trap 'rm -f "$skip_log"' EXIT
strict=0
[[ "${CI:-}" == true ]] && strict=1

skip() { [[ " ${MS_SKIP:-} " == *" $1 "* ]]; }

# skipped_here WHAT : count a skip; under CI=true it is a failure (returns 1).
skipped_here() {
  echo "$1" >>"$skip_log"
  if [[ $strict == 1 ]]; then
    echo "FAIL $1 skipped, and nothing may skip under CI=true"
    return 1
  fi
  echo "SKIP $1"
}

suite() {
  local name="$1"
  shift
  if skip "$name"; then
    if [[ $strict == 1 ]]; then
      failed=$((failed + 1))
      failed_names+=("$name")
      echo "=== $name: FAILED: in MS_SKIP, and nothing may skip under CI=true"
    else
      skipped=$((skipped + 1))
      echo "=== $name: skipped (MS_SKIP)"
    fi
    return
  fi
  echo "=== $name"
  local start=$SECONDS
  if "$@"; then
    passed=$((passed + 1))
    echo "=== $name: passed in $((SECONDS - start)) s"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    echo "=== $name: FAILED after $((SECONDS - start)) s"
  fi
}

build() { # build DIR TYPE [cmake args...]
  local dir="$1" type="$2"
  shift 2
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$type" "$@" >/dev/null &&
    ninja -C "$dir" -j "$jobs" >/dev/null
}

# The fewest tests each label of the unit+scenarios suite may run, set just
# under the counts of December 2026 (unit 52 with the lint.* and shell.* checks,
# test_scrape and test_scrape_fetch,
# scenario 83 with the round scenarios of tests/scenarios/rounds and their
# refusals, shared-scenario 16: the scenarios of ../shared/scenarios). A label
# that matched nothing, a glob that found no files or a folder that went
# missing fails here instead of passing with fewer tests; raise a floor when
# its label grows.
declare -A test_floor=([unit]=51 [scenario]=82 [shared-scenario]=15)

# check_test_counts LOG: each label's count from ctest's "Label Time Summary"
# against its floor. The shared scenarios are a skip outside CI when
# ../shared is missing (the configure step warned), a failure under CI=true.
check_test_counts() {
  local log="$1" label count rc=0
  for label in "${!test_floor[@]}"; do
    count="$(sed -nE "s/^${label} +=.*\(([0-9]+) tests?\)\s*$/\1/p" "$log")"
    count="${count:-0}"
    echo "ctest: label $label ran $count tests (floor ${test_floor[$label]})"
    if ((count >= test_floor[$label])); then
      continue
    elif [[ $label == shared-scenario && $count -eq 0 ]]; then
      skipped_here "the shared scenarios (no ../shared/scenarios nor MS_SHARED_SCENARIOS folder; see the configure warning)" || rc=1
    else
      echo "FAIL label $label ran $count tests, fewer than its floor ${test_floor[$label]}"
      rc=1
    fi
  done
  return "$rc"
}

unit_and_scenarios() {
  build build-san Sanitize || return 1
  # halt_on_error keeps the first report readable; any report fails ctest.
  # The integration tests need servers: the integration suite runs them.
  # --no-tests=error: a selection that matches nothing fails.
  local log rc n
  log="$(mktemp)"
  ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-san --output-on-failure --no-tests=error -j "$jobs" -L 'unit|scenario' 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  n="$(grep -cE '\*\*\*Skipped|\(Skipped\)|Not Run' "$log")"
  check_test_counts "$log" || rc=1
  rm -f "$log"
  for ((; n > 0; n--)); do skipped_here "a ctest test (see above)" || rc=1; done
  return "$rc"
}

# vg_run WHAT WANT CMD...: CMD under valgrind must exit WANT. Anything else
# fails: 99 is valgrind's own report (memory errors, leaks), 128+N a signal
# (a crash: 134 abort, 139 segfault), any other code a wrong answer.
vg_run() {
  local what="$1" want="$2" err rc
  shift 2
  err="$(mktemp)"
  valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    "$@" >/dev/null 2>"$err"
  rc=$?
  if [[ $rc -ne $want ]]; then
    if [[ $rc -eq 99 ]]; then
      echo "valgrind: $what: valgrind reports errors (exit 99):"
    elif [[ $rc -gt 128 ]]; then
      echo "valgrind: $what: killed by signal $((rc - 128)) (exit $rc), expected exit $want:"
    else
      echo "valgrind: $what: exit $rc, expected $want:"
    fi
    cat "$err"
  fi
  rm -f "$err"
  [[ $rc -eq $want ]]
}

# Every decide scenario exits 0, every refusal in invalid/ exits 2 (the
# decide contract), every unit test binary 0; each class must find files.
under_valgrind() {
  build build-debug Debug || return 1
  local runs=0 bad=0 f
  local -a scenarios invalid units
  shopt -s nullglob
  scenarios=(tests/scenarios/*.json tests/scenarios/rounds/*.json)
  invalid=(tests/scenarios/invalid/*.json)
  units=(build-debug/tests/test_* build-debug/e2e/lab/load/test_load)
  shopt -u nullglob
  if ((${#scenarios[@]} == 0 || ${#invalid[@]} == 0 || ${#units[@]} == 0)); then
    echo "valgrind: found ${#scenarios[@]} scenarios, ${#invalid[@]} refusals, ${#units[@]} unit tests; none may be 0"
    return 1
  fi
  for f in "${scenarios[@]}"; do
    vg_run "decide -f $f" 0 build-debug/meshscaler decide -f "$f" || bad=$((bad + 1))
    runs=$((runs + 1))
  done
  for f in "${invalid[@]}"; do
    vg_run "decide -f $f" 2 build-debug/meshscaler decide -f "$f" || bad=$((bad + 1))
    runs=$((runs + 1))
  done
  for f in "${units[@]}"; do
    vg_run "$f" 0 "$f" || bad=$((bad + 1))
    runs=$((runs + 1))
  done
  echo "valgrind: $runs runs, $bad failed"
  [[ $bad -eq 0 ]]
}

# The lab's load client against a real HAProxy on this host (no cluster, ~35 s):
# the sanitizer build's client, and the Debug build's under valgrind.
load_client() {
  VALGRIND_LOAD=build-debug/e2e/lab/load/meshscaler-load \
    bash e2e/lab/load/check.sh build-san/e2e/lab/load/meshscaler-load
}

fuzz() { FUZZ_SECONDS="${FUZZ_SECONDS:-30}" bash tests/fuzz/run.sh; }

bench() {
  build build-release Release || return 1
  build-release/bench_engine 100000 20 &&
    build-release/bench_budget &&
    build-release/bench_scrape_fetch --pods 16 &&
    build-release/bench_scrape_fetch --pods 100
}

e2e_smoke() {
  if [[ ! -x e2e/smoke.sh ]]; then
    echo "e2e/smoke.sh is missing"
    return 1
  fi
  e2e/smoke.sh
}

# One environment for every integration runner; each runner exits 77 when
# it lacks what it needs, which counts as a failure here (CI has it all).
# e2e/local up's output goes to build-e2e-logs/up.log; a progress line shows its last
# line while it runs (e2e-smoke has built everything before: ~45 s).
integration() (
  export MESHSCALER_E2E_STATE="$root/build-e2e-state"
  export MS_IT_BUILD=build-san # the sanitizer build of the unit suite
  e2e/local down >/dev/null 2>&1 || true
  mkdir -p build-e2e-logs
  : >build-e2e-logs/up.log
  progress_run "bringing the local cluster up" "~10 min (after e2e-smoke: ~45 s)" "~45 s" build-e2e-logs/up.log \
    e2e/local up || {
    tail -n 20 build-e2e-logs/up.log
    e2e/local logs kube-apiserver 2>&1 | tail -20
    exit 1
  }
  eval "$(e2e/local env)"
  rc=0
  for runner in tests/integration/*/run.sh; do
    echo "--- $runner"
    t=$SECONDS
    bash "$runner"
    status=$?
    echo "--- $runner: exit $status in $((SECONDS - t)) s"
    case $status in
      0) ;;
      77) skipped_here "$runner" || rc=1 ;;
      *) echo "--- $runner exited $status"; rc=1 ;;
    esac
  done
  e2e/local down >/dev/null || { status=$?; echo "--- e2e/local down exited $status"; rc=1; }
  exit $rc
)

suite deps bash scripts/install-deps.sh build fuzz valgrind load
suite unit+scenarios unit_and_scenarios
suite valgrind under_valgrind
suite load-client load_client
suite fuzz fuzz
suite bench bench
suite chart bash tests/chart/run.sh
suite e2e-smoke e2e_smoke
suite integration integration
# The lab's scenarios one after the other (each brings the node up and down: it is
# a machine singleton); both run, and the suite fails if one did.
lab() {
  local rc=0 scenario t
  for scenario in blind-vs-aware retry-storm edge-flows shared-edge; do
    echo "--- e2e/lab/$scenario.sh --short"
    t=$SECONDS
    bash "e2e/lab/$scenario.sh" --short || { echo "lab: $scenario failed"; rc=1; }
    echo "--- e2e/lab/$scenario.sh: $((SECONDS - t)) s"
  done
  return $rc
}

suite lab lab

echo
if [[ $failed -gt 0 ]]; then
  echo "failed suites: ${failed_names[*]}"
fi
echo "suites: $passed passed, $failed failed, $skipped skipped; tests skipped: $(wc -l <"$skip_log")"
[[ $failed -eq 0 ]]
