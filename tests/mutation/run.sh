#!/usr/bin/env bash
# tests/mutation/run.sh - mutation testing of the decision-critical files.
#
#   bash tests/mutation/run.sh                       # every default file, every mutant
#   bash tests/mutation/run.sh src/engine/*.c        # narrow to some files
#   MUT_SAMPLE=40 bash tests/mutation/run.sh         # 40 mutants per file, for a quick run
#   MUT_ONLY_SURVIVORS=1 bash tests/mutation/run.sh  # re-run the last run's survivors only
#
# Not part of scripts/test.sh: a full run takes hours. What it does:
#  1. installs universalmutator (pip, pinned version) into build-mut/venv;
#  2. copies the working tree (tracked and untracked, not ignored files, with
#     their mtimes) to build-mut/tree<k>: the repository's src/ is never
#     mutated in place, and a run works on that snapshot throughout. ../shared/scenarios is linked beside the copy, so the shared
#     scenarios are run as in a normal build;
#  3. configures build-mut/build<k> (Debug, Ninja, MS_WERROR=OFF: a mutant that
#     only draws a warning is still a behaviour change to test; but
#     -Werror=return-type: a function that falls off its end returns garbage,
#     not a mutant worth a test), builds the fast tests and checks that they
#     pass unmutated;
#  4. generates mutants with universalmutator's C rules (universal.rules,
#     c.rules, c_like.rules), `--noCheck` (its C handler does not compile;
#     the build below decides what compiles), keeping its default pruning of
#     duplicate mutants (no --redundantOK);
#  5. for each mutant: copies it over the source in the private tree,
#     rebuilds the library and the test executables (first those of the
#     file's own tests, then the rest), runs the fast tests
#        ctest -R '^(unit|scenario|invalid|cli)\.'   (no integration suites)
#     first the file's own unit tests (test_<dir>*, test_<file>*, and for
#     src/engine the scenario, invalid and cli tests), stopping at the first
#     failure, then the others; and classifies it:
#        killed        a test failed
#        timeout       the tests ran past MUT_TIMEOUT (or one test past
#                      MUT_TEST_TIMEOUT): counted as killed
#        killed-san    (MUT_SANITIZE_SURVIVORS=1) every fast test passed in
#                      the Debug build, but a fast test failed in the Sanitize
#                      build (ASan + UBSan, run with scripts/test.sh's
#                      ASAN_OPTIONS/UBSAN_OPTIONS): the killer column says
#                      which test and what saw it (asan, lsan, ubsan, or
#                      "test" for a plain failure of the -O1 build)
#        killed-vg     (MUT_VALGRIND_SURVIVORS=1) passed both builds, but
#                      valgrind (memcheck, leaks definite/indirect) reported
#                      an error on one of the file's own tests (Debug build)
#        survived      every fast test passed (and, with the options above,
#                      neither the sanitizers nor valgrind saw anything)
#        not-compiled  the build failed: reported apart, neither killed nor alive
#        stale         (re-runs only) the mutated line is no longer in the source
#  6. prints one line per survivor (file:line, the line before and after) and
#     a table per file whose columns add up to the mutants run (killed by
#     tests, by ASan/UBSan, by valgrind, timeout, survived, not compiled,
#     stale). Results: build-mut/results.tsv (id, file, line, status,
#     seconds, before, after, killer).
#
# Skipped lines (not mutated), by filtering before universalmutator sees
# the file: comments are blanked (line numbers kept; universalmutator itself
# would skip every line that merely contains "/*", code included), and lines
# of logging statements (MS_LOG_*) and assert(...) calls, continuation lines
# included, are passed to universalmutator's --ignore. A mutant of the
# comment-free copy replaces the source: comments do not compile to anything.
#
# Environment:
#   MUT_SAMPLE=N        at most N mutants per file, a fixed random pick (MUT_SEED, default 1)
#   MUT_JOBS=N          parallel workers, each with its own tree and build (default 1)
#   MUT_TIMEOUT=S       test time allowed per mutant (default 60)
#   MUT_TEST_TIMEOUT=S  time allowed per test (default 20)
#   MUT_NICE=N          niceness of the whole run (default 19)
#   MUT_BUILD_TYPE=T    CMake build type (default Debug); Sanitize (ASan +
#                       UBSan) also kills mutants that only read or write out
#                       of bounds or leak, at about twice the time; use a
#                       separate MUT_DIR for it
#   MUT_DIR=DIR         work directory (default <repo>/build-mut)
#   MUT_SANITIZE_SURVIVORS=1  re-run each survivor of the Debug build's fast
#                       tests in a Sanitize build of the same mutant
#                       (build<k>-san; its own unmutated baseline first);
#                       kills there are "killed-san", their own column
#   MUT_VALGRIND_SURVIVORS=1  then run what still survives under valgrind:
#                       the file's own tests (MUT_VG_TESTS, a ctest regex,
#                       default the unit tests among them), Debug build,
#                       children traced (the scenarios' meshscaler too)
#   MUT_SAN_TESTS=first  in that re-check, only the file's own tests (see
#                       first_tests below; for src/engine every engine unit
#                       test and every scenario): about half the time of all
#                       the fast tests (default all)
#   MUT_LINES="FILE:LINE[,LINE...] ..."  only the mutants of these lines of
#                       these files (every one of them, no sampling); the
#                       other files given run as usual
#   MUT_SAN_TIMEOUT=S   test time allowed per mutant in the Sanitize build
#                       (default 3 x MUT_TIMEOUT); one test gets 3 x
#                       MUT_TEST_TIMEOUT there
#   MUT_VG_TIMEOUT=S, MUT_VG_TEST_TIMEOUT=S  the same under valgrind (default
#                       900 and 300: memcheck is 20-50 times slower). A timeout
#                       in either re-check leaves the mutant "survived" (noted
#                       in the killer column)
#   MUT_ONLY_SURVIVORS=1  re-run only the survivors of the last results.tsv,
#                       with the same mutants (the old results are kept as
#                       results.before.tsv); for checking new tests
#   MUT_RESUME=1        run what the last run's queue still holds (an
#                       interrupted run), keeping its results
#   MUT_FAST=REGEX      the ctest tests run against each mutant (default the fast
#                       ones, '^(unit|scenario|invalid|cli)\.'); e.g. add
#                       '|^integration\.kube_it_lease$' with an API server up
#                       (e2e/local up --no-node) and the MS_IT_* variables of
#                       tests/integration/kube/run.sh set: lease.c's runtime is
#                       reached only there (docs/testing.md)
#   MUT_EXCLUDE=REGEX   leave these ctest tests out (e.g. to measure "before"
#                       a new test: MUT_EXCLUDE='^unit\.test_engine_mutants$')
# With MUT_ONLY_SURVIVORS or MUT_RESUME, a file edited since its mutants were
# made gets each mutant carried over to its current text ("stale", not run,
# when the mutated line is gone).
set -euo pipefail

REPO=${MUT_REPO:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
OUT=${MUT_DIR:-$REPO/build-mut}
# Run from a copy: bash reads a script as it goes, and a run outlives edits.
if [[ -z ${MUT_REPO:-} ]]; then
  mkdir -p "$OUT"
  cp "${BASH_SOURCE[0]}" "$OUT/run.sh.running"
  MUT_REPO=$REPO exec bash "$OUT/run.sh.running" "$@"
fi
JOBS=${MUT_JOBS:-1}
SAMPLE=${MUT_SAMPLE:-0}
SEED=${MUT_SEED:-1}
TIMEOUT=${MUT_TIMEOUT:-60}
TEST_TIMEOUT=${MUT_TEST_TIMEOUT:-20}
SAN=${MUT_SANITIZE_SURVIVORS:-0}
VG=${MUT_VALGRIND_SURVIVORS:-0}
SAN_TIMEOUT=${MUT_SAN_TIMEOUT:-$((3 * TIMEOUT))}
VG_TIMEOUT=${MUT_VG_TIMEOUT:-900}
VG_TEST_TIMEOUT=${MUT_VG_TEST_TIMEOUT:-300}
# The sanitizers' settings of scripts/test.sh's unit_and_scenarios suite.
SAN_ENV=(ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1)
# scripts/test.sh's valgrind suite, with a log per process instead of an exit code
# (cli_check runs meshscaler: a child's error must not hide behind its parent's exit).
# shellcheck disable=SC2054 # the commas are valgrind's own list
VG_CMD=(valgrind -q --trace-children=yes --leak-check=full --errors-for-leak-kinds=definite,indirect)
UM_VERSION=1.14.1
FAST=${MUT_FAST:-'^(unit|scenario|invalid|cli)\.'}
DEFAULT_FILES=(src/engine/*.c src/prom/decode.c src/prom/result.c src/prom/tick.c src/controller/status.c
               src/controller/workqueue.c src/kube/watch.c src/kube/informer.c src/kube/lease.c)

renice -n "${MUT_NICE:-19}" -p $$ >/dev/null 2>&1 || true
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
log() { printf '[mutation] %s\n' "$*" >&2; }

cd "$REPO"
if (($# > 0)); then FILES=("$@"); else FILES=("${DEFAULT_FILES[@]}"); fi
for i in "${!FILES[@]}"; do
  f=${FILES[$i]}
  case $f in /*) f=${f#"$REPO"/} ;; esac
  f=${f#./}
  [[ -f $REPO/$f ]] || { log "no such file: $f"; exit 2; }
  FILES[$i]=$f
done

# ---- 1. universalmutator ------------------------------------------------------
VENV=$OUT/venv
if ! "$VENV/bin/mutate" --help >/dev/null 2>&1 ||
   [[ $("$VENV/bin/python" -m pip show universalmutator 2>/dev/null | sed -n 's/^Version: //p') != "$UM_VERSION" ]]; then
  log "installing universalmutator $UM_VERSION into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q "universalmutator==$UM_VERSION"
fi

# Helpers in Python: the comment stripper, the mutant index, the test map.
PYHELP=$OUT/helpers.py
cat >"$PYHELP" <<'PY'
import json, os, re, sys

def strip(src_path, dst_path):
    """Blank comments (keeping every newline) and mark the lines of
    MS_LOG_* and assert() statements with //MS_MUT_SKIP."""
    s = open(src_path).read()
    out, i, n = [], 0, len(s)
    while i < n:
        if s.startswith('//', i):
            j = s.find('\n', i)
            i = n if j < 0 else j
        elif s.startswith('/*', i):
            j = s.find('*/', i + 2)
            j = n if j < 0 else j + 2
            nl = s.count('\n', i, j)
            out.append('\n' * nl if nl else ' ')
            i = j
        elif s[i] in '"\'':
            q, j = s[i], i + 1
            while j < n and s[j] != q and s[j] != '\n':
                j += 2 if s[j] == '\\' else 1
            out.append(s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    lines = [l.rstrip() for l in ''.join(out).split('\n')]
    depth, skipping = 0, False
    start = re.compile(r'(^|[^\w])(MS_LOG_[A-Z]+|assert)\s*\(')
    for k, l in enumerate(lines):
        bare = re.sub(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'', '""', l)
        if not skipping and start.search(bare):
            skipping, depth = True, 0
        if skipping:
            depth += bare.count('(') - bare.count(')')
            lines[k] = l + ' //MS_MUT_SKIP'
            if depth <= 0:
                skipping = False
    open(dst_path, 'w').write('\n'.join(lines))

def index(orig_path, stripped_path, mutant_dir, rel, out_path):
    """One line per mutant: id, file, line, the original line, the mutated one."""
    orig = open(orig_path).read().split('\n')
    base = open(stripped_path).read().split('\n')
    rx = re.compile(r'\.mutant\.(\d+)\.c$')
    rows = []
    for name in os.listdir(mutant_dir):
        m = rx.search(name)
        if not m:
            continue
        mut = open(os.path.join(mutant_dir, name)).read().split('\n')
        k = 0
        while k < len(base) and k < len(mut) and base[k] == mut[k]:
            k += 1
        if len(mut) > len(base) and k > 0:  # break;/continue; inserted after line k
            k -= 1
            after = base[k].strip() + ' \u23ce ' + mut[k + 1].strip()
        else:
            after = mut[k] if k < len(mut) else ''
        before = orig[k] if k < len(orig) else ''
        clean = lambda t: t.replace('\t', ' ').replace(' //MS_MUT_SKIP', '').strip() or '(empty)'
        rows.append((int(m.group(1)), rel, k + 1, clean(before), clean(after), name))
    rows.sort()
    with open(out_path, 'w') as f:
        for r in rows:
            f.write('\t'.join(map(str, r)) + '\n')

def rebase(old_path, mutant_path, new_path, out_path):
    """Carry a mutant of an older (stripped) source over to the current one:
    its one hunk, with a line of context either side, is looked up in the
    current source (nearest to where it was). Exit 3 when it is gone."""
    old = open(old_path).read().split('\n')
    mut = open(mutant_path).read().split('\n')
    new = open(new_path).read().split('\n')
    k = 0
    while k < len(old) and k < len(mut) and old[k] == mut[k]:
        k += 1
    suf = 0
    while suf < len(old) - k and suf < len(mut) - k and old[-1 - suf] == mut[-1 - suf]:
        suf += 1
    lo, a, b = max(k - 1, 0), min(len(old) - suf + 1, len(old)), min(len(mut) - suf + 1, len(mut))
    want = old[lo:a]
    hits = [i for i in range(len(new) - len(want) + 1) if new[i:i + len(want)] == want]
    if not hits:
        sys.exit(3)
    i = min(hits, key=lambda h: abs(h - lo))
    open(out_path, 'w').write('\n'.join(new[:i] + mut[lo:b] + new[i + len(want):]))

def sample(index_path, n, seed):
    """n lines of the index, a uniform pick fixed by seed, in id order.
    (shuf --random-source=<(yes SEED) was not one: its constant bytes picked
    ids in arithmetic runs, a few lines of a file.)"""
    import random
    rows = [l for l in open(index_path) if l.strip()]
    pick = random.Random(int(seed)).sample(rows, min(int(n), len(rows)))
    pick.sort(key=lambda l: int(l.split('\t', 1)[0]))
    sys.stdout.write(''.join(pick))

def targets(build, include, exclude):
    """The executables the tests matching include (and not exclude) run."""
    d = json.load(sys.stdin)
    b = os.path.realpath(build)
    inc, exc = re.compile(include), re.compile(exclude) if exclude else None
    # ninja's executables (an interrupted link may have removed the file)
    exes = set()
    for l in open(os.path.join(b, 'targets.txt')):
        out, _, rule = l.partition(': ')
        if rule.startswith('C_EXECUTABLE_LINKER'):
            exes.add(out)
    t = set()
    for x in d['tests']:
        if not inc.search(x['name']) or (exc and exc.search(x['name'])):
            continue
        for a in x.get('command', []):
            r = os.path.relpath(a, b) if a.startswith(b + '/') else None
            if r in exes:
                t.add(r)
    print(' '.join(sorted(t)))

def commands():
    """name<TAB>shell-quoted command, one line per test."""
    import shlex
    d = json.load(sys.stdin)
    for x in d['tests']:
        if x.get('command'):
            print(x['name'] + '\t' + ' '.join(shlex.quote(a) for a in x['command']))

def table(results, title):
    """Per file: killed by the tests, by the sanitizers (Sanitize build),
    by valgrind, timeouts (counted as killed), survived, not compiled,
    stale; 'total' = the mutants that compiled and ran."""
    cols = ['killed', 'killed-san', 'killed-vg', 'timeout', 'survived', 'not-compiled', 'stale']
    per = {}
    for l in open(results):
        f = l.rstrip('\n').split('\t')
        if len(f) < 4:
            continue
        p = per.setdefault(f[1], dict.fromkeys(cols, 0))
        p[f[3]] = p.get(f[3], 0) + 1
    print(title)
    print('%-28s %7s %6s %6s %7s %8s %6s %7s %6s %7s %7s' % ('file', 'tests', 'san', 'vg', 'timeout',
          'survived', 'total', 'not-comp', 'stale', 'all', 'score'))
    tot = dict.fromkeys(cols, 0)
    for name in sorted(per) + ['TOTAL']:
        p = tot if name == 'TOTAL' else per[name]
        if name != 'TOTAL':
            for k in tot:
                tot[k] += p.get(k, 0)
        killed = p['killed'] + p['killed-san'] + p['killed-vg'] + p['timeout']
        total = killed + p['survived']
        score = '%.1f%%' % (100.0 * killed / total) if total else '-'
        print('%-28s %7d %6d %6d %7d %8d %6d %7d %6d %7d %7s' % (name, p['killed'], p['killed-san'],
              p['killed-vg'], p['timeout'], p['survived'], total, p['not-compiled'], p['stale'],
              total + p['not-compiled'] + p['stale'], score))

if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'strip': strip(*sys.argv[2:4])
    elif cmd == 'index': index(*sys.argv[2:7])
    elif cmd == 'rebase': rebase(*sys.argv[2:6])
    elif cmd == 'sample': sample(*sys.argv[2:5])
    elif cmd == 'targets': targets(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else '')
    elif cmd == 'table': table(sys.argv[2], sys.argv[3])
    elif cmd == 'commands': commands()
PY
py() { "$VENV/bin/python" "$PYHELP" "$@"; }

# ---- 2./3. private trees and builds ---------------------------------------------
if [[ -d $REPO/../shared && ! -e $OUT/shared ]]; then
  ln -s "$(cd "$REPO/../shared" && pwd)" "$OUT/shared"
fi

prepare_build() { # k build type [VAR=value...]: configure, build, baseline
  local k=$1 tree=$OUT/tree$1 build=$2 type=$3 t0 t1
  shift 3
  # A run that stopped with a mutant in place left its object behind.
  if [[ -f $build.dirty ]]; then
    rm -f "$build/CMakeFiles/meshscaler_core.dir/$(cat "$build.dirty").o"
    rm -f "$build.dirty"
  fi
  cmake -S "$tree" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" -DMS_WERROR=OFF \
    -DCMAKE_C_FLAGS=-Werror=return-type >"$build.log" 2>&1 ||
    { cat "$build.log" >&2; log "configure failed ($type)"; return 1; }
  # Everything once (ctest names a test's executable only once it exists),
  # then the map from tests to the executables they run.
  ninja -C "$build" -j1 >"$build.log" 2>&1 || { tail -30 "$build.log" >&2; log "build failed unmutated ($type)"; return 1; }
  (cd "$build" && ctest --show-only=json-v1 -R "$FAST") >"$build.tests.json"
  ninja -C "$build" -t targets all >"$build/targets.txt"
  t0=$(date +%s%N)
  : >"$build.exclude"
  if ! (cd "$build" && env "$@" ctest -R "$FAST" --timeout "$TEST_TIMEOUT") >"$build.baseline.log" 2>&1; then
    # A test that fails unmutated (someone's work in progress in the tree)
    # can kill nothing: leave it out, and say so.
    local failed
    failed=$(sed -nE 's/^[[:space:]]+[0-9]+ - ([^ ]+) \(.*\)$/\1/p' "$build.baseline.log")
    if [[ -z $failed ]] || (($(wc -w <<<"$failed") > 3)); then
      grep -E '\*\*\*|Failed' "$build.baseline.log" >&2 || true
      log "the fast tests fail without any mutant ($type); fix that first"
      return 1
    fi
    log "WARNING: failing without any mutant ($type), left out of this run: $(echo $failed)"
    echo "^($(echo $failed | sed 's/ /|/g; s/\./\\./g'))\$" >"$build.exclude"
  fi
  t1=$(date +%s%N)
  log "worker $k: unmutated fast tests pass in $(((t1 - t0) / 1000000)) ms ($type)"
}

prepare_worker() { # k
  local k=$1 tree=$OUT/tree$1
  rm -rf "$tree"
  mkdir -p "$tree"
  # tar keeps mtimes: ninja rebuilds only what changed since the last run.
  (cd "$REPO" && git ls-files -z -co --exclude-standard |
     while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s\0' "$f"; done |
     tar --null --no-recursion -T - -cf -) | tar -xf - -C "$tree"
  prepare_build "$k" "$OUT/build$k" "${MUT_BUILD_TYPE:-Debug}" || return 1
  if [[ $SAN == 1 ]]; then
    prepare_build "$k" "$OUT/build$k-san" Sanitize "${SAN_ENV[@]}" || return 1
  fi
  if [[ $VG == 1 ]]; then
    command -v valgrind >/dev/null || { log "MUT_VALGRIND_SURVIVORS=1 needs valgrind"; return 1; }
  fi
}

for ((k = 0; k < JOBS; k++)); do prepare_worker "$k"; done

# ---- 4. mutants -------------------------------------------------------------------
MUT=$OUT/mutants
key_of() { echo "${1//\//_}"; }
RESULTS=$OUT/results.tsv
QUEUE=$OUT/queue.tsv
printf '%s\n' "${FILES[@]}" >"$OUT/files.txt"

# Queue lines of the index for the (file, id) pairs on stdin.
from_index() {
  local f key
  while read -r f; do
    key=$(key_of "$f")
    awk -F'\t' -v f="$f" 'NR == FNR {if ($1 == f) want[$2] = 1; next} ($1 in want)' \
      "$OUT/pairs.tsv" "$MUT/$key/index.tsv"
  done <"$OUT/files.txt"
}

if [[ ${MUT_ONLY_SURVIVORS:-0} == 1 || ${MUT_RESUME:-0} == 1 ]]; then
  [[ -f $RESULTS ]] || { log "no $RESULTS to go on from"; exit 2; }
  for f in "${FILES[@]}"; do
    key=$(key_of "$f")
    [[ -f $MUT/$key/index.tsv ]] || { log "no mutants of $f: run without MUT_RESUME/MUT_ONLY_SURVIVORS"; exit 2; }
    # Index again (older runs wrote empty lines as empty fields).
    py index "$MUT/$key/orig.c" "$MUT/$key/$(basename "$f")" "$MUT/$key/m" "$f" "$MUT/$key/index.tsv"
    # A source edited since its mutants were made: each mutant is carried
    # over to the current text (or reported stale when its line is gone).
    py strip "$OUT/tree0/$f" "$MUT/$key/current.c"
    if cmp -s "$MUT/$key/current.c" "$MUT/$key/$(basename "$f")"; then
      rm -f "$MUT/$key/rebase"
    else
      touch "$MUT/$key/rebase"
      log "$f changed since its mutants were made: carrying them over"
    fi
  done
  if [[ ${MUT_ONLY_SURVIVORS:-0} == 1 ]]; then
    cp "$RESULTS" "$OUT/results.before.tsv"
    awk -F'\t' '$4 == "survived" {print $2 "\t" $1}' "$OUT/results.before.tsv" >"$OUT/pairs.tsv"
    # Keep every other result; the re-run ones are appended below.
    awk -F'\t' 'NR == FNR {f[$0] = 1; next} !($4 == "survived" && ($2 in f))' \
      "$OUT/files.txt" "$OUT/results.before.tsv" >"$RESULTS.new"
    mv "$RESULTS.new" "$RESULTS"
  else # resume: what the last queue still holds
    awk -F'\t' 'NR == FNR {done[$2 "\t" $1] = 1; next} !(($2 "\t" $1) in done) {print $2 "\t" $1}' \
      "$RESULTS" "$QUEUE" >"$OUT/pairs.tsv"
  fi
  from_index >"$QUEUE.new"
  mv "$QUEUE.new" "$QUEUE"
else
  : >"$RESULTS"
  : >"$QUEUE"
  for f in "${FILES[@]}"; do
    key=$(key_of "$f")
    rm -rf "${MUT:?}/$key"
    mkdir -p "$MUT/$key/m"
    printf '%s\n' 'MS_MUT_SKIP' 'MS_LOG_' '(^|[^A-Za-z0-9_])assert\s*\(' >"$MUT/ignore.txt"
    cp "$OUT/tree0/$f" "$MUT/$key/orig.c"
    py strip "$MUT/$key/orig.c" "$MUT/$key/$(basename "$f")"
    (cd "$MUT/$key" && "$VENV/bin/mutate" "$(basename "$f")" c --noCheck \
       --ignore "$MUT/ignore.txt" --mutantDir m >mutate.log 2>&1) ||
      { tail "$MUT/$key/mutate.log" >&2; log "mutate failed on $f"; exit 1; }
    py index "$MUT/$key/orig.c" "$MUT/$key/$(basename "$f")" "$MUT/$key/m" "$f" "$MUT/$key/index.tsv"
    n=$(wc -l <"$MUT/$key/index.tsv")
    lines=$(for l in ${MUT_LINES:-}; do if [[ ${l%:*} == "$f" ]]; then echo "${l##*:}"; fi; done | tr ',' ' ')
    if [[ -n $lines ]]; then
      awk -F'\t' -v want=" $(echo $lines) " 'index(want, " " $3 " ")' "$MUT/$key/index.tsv" >>"$QUEUE"
      log "$f: $n mutants, of which those of lines $(echo $lines): $(awk -F'\t' -v want=" $(echo $lines) " 'index(want, " " $3 " ")' "$MUT/$key/index.tsv" | wc -l)"
    elif ((SAMPLE > 0 && n > SAMPLE)); then
      py sample "$MUT/$key/index.tsv" "$SAMPLE" "$SEED" >>"$QUEUE"
      log "$f: $n mutants, sampling $SAMPLE"
    else
      cat "$MUT/$key/index.tsv" >>"$QUEUE"
      log "$f: $n mutants"
    fi
  done
fi
log "$(wc -l <"$QUEUE") mutants to run, $JOBS worker(s)"

# ---- 5. run ----------------------------------------------------------------------
# Tests that most likely kill a mutant of $1 run first (and stop at the
# first failure); the rest only when those all pass.
first_tests() {
  local dir base
  dir=$(basename "$(dirname "$1")")
  base=$(basename "$1" .c)
  case $dir in
    engine | decide | api) echo "^(unit\\.test_($dir|$base|decide|spec_json)|scenario\\.|invalid\\.|cli\\.)" ;;
    *) echo "^unit\\.test_($dir|$base)" ;;
  esac
}

run_tests() { # build regex exclude budget test-timeout [VAR=value...] -> prints status [test]
  local build=$1 rx=$2 ex=$3 budget=$4 ttime=$5 rc out base
  shift 5
  out=$build.ctest.log
  base=$(cat "$build.exclude")
  if [[ -n ${MUT_EXCLUDE:-} ]]; then base=${base:+$base|}$MUT_EXCLUDE; fi
  if [[ -n $base ]]; then ex="${ex:+($ex)|}($base)"; fi
  local args=(-R "$rx" --stop-on-failure --no-tests=ignore --output-on-failure --timeout "$ttime")
  if [[ -n $ex ]]; then args+=(-E "$ex"); fi
  set +e
  (cd "$build" && timeout -k 5 "$budget" env "$@" ctest "${args[@]}") >"$out" 2>&1
  rc=$?
  set -e
  if ((rc == 0)); then
    echo pass
  elif ((rc == 124 || rc == 137)) || grep -q '\*\*\*Timeout' "$out"; then
    echo "timeout $(grep -m1 -E '\*\*\*Timeout' "$out" | sed -E 's/.*#[0-9]+: ([^ ]+) .*/\1/')"
  else
    echo "killed $(grep -m1 -E '\*\*\*|Failed|Exception' "$out" | sed -E 's/.*#[0-9]+: ([^ ]+) .*/\1/')"
  fi
}

# What saw a failure in a Sanitize build's ctest log.
san_kind() { # log
  if grep -q 'ERROR: LeakSanitizer' "$1"; then echo lsan
  elif grep -q 'ERROR: AddressSanitizer' "$1"; then echo asan
  elif grep -qE 'runtime error:|UndefinedBehaviorSanitizer' "$1"; then echo ubsan
  else echo test
  fi
}

# Build the mutant (in place in the tree) in the Sanitize build and run the
# fast tests there, the file's own first. Prints killed-san <test> <kind>,
# or survived [note].
recheck_sanitize() { # build first-regex targets1 targets2
  local san=$1-san first=$2 t1=$3 t2=$4 res rel
  rel=$(cat "$1.dirty")
  echo "$rel" >"$san.dirty"
  rm -f "$san/CMakeFiles/meshscaler_core.dir/$rel.o"
  [[ ${MUT_SAN_TESTS:-all} == first ]] && t2=
  if ! ninja -C "$san" -j1 $t1 $t2 >"$san.ninja.log" 2>&1; then
    echo "survived san-not-compiled"
    return
  fi
  res=$(run_tests "$san" "$first" "" "$SAN_TIMEOUT" "$((3 * TEST_TIMEOUT))" "${SAN_ENV[@]}")
  if [[ $res == pass && ${MUT_SAN_TESTS:-all} != first ]]; then
    res=$(run_tests "$san" "$FAST" "$first" "$SAN_TIMEOUT" "$((3 * TEST_TIMEOUT))" "${SAN_ENV[@]}")
  fi
  case $res in
    pass) echo survived ;;
    timeout*) echo "survived san-timeout:${res#timeout }" ;;
    killed*) echo "killed-san ${res#killed } $(san_kind "$san.ctest.log")" ;;
  esac
}

# Run the tests matching MUT_VG_TESTS among the file's own (Debug build, the
# mutant in place) under valgrind. Prints killed-vg <test>, or survived [note].
recheck_valgrind() { # build first-regex
  local build=$1 first=$2 rx=${MUT_VG_TESTS:-'^unit\.'} name cmd vlog t0 budget=$VG_TIMEOUT rc
  vlog=$build.vg
  rm -rf "$vlog"
  mkdir -p "$vlog"
  t0=$(date +%s)
  while IFS=$'\t' read -r name cmd; do
    [[ $name =~ $first && $name =~ $rx ]] || continue
    if [[ -s $build.exclude ]] && [[ $name =~ $(cat "$build.exclude") ]]; then continue; fi
    if (($(date +%s) - t0 >= budget)); then echo "survived vg-timeout"; return; fi
    set +e
    (cd "$build" && eval "timeout -k 5 $VG_TEST_TIMEOUT ${VG_CMD[*]} --log-file=$vlog/$name.%p $cmd") >/dev/null 2>&1
    rc=$?
    set -e
    if grep -qs . "$vlog/$name".*; then echo "killed-vg $name"; return; fi
    if ((rc == 124 || rc == 137)); then echo "survived vg-timeout:$name"; return; fi
  done < <(py commands <"$build.tests.json")
  echo survived
}

worker() { # k
  local k=$1 tree=$OUT/tree$1 build=$OUT/build$1 n=0
  local id rel line before after name key status killer t0 t1 used first targets1 targets2 res rc
  local prev_rel=
  while IFS=$'\t' read -r id rel line before after name; do
    n=$((n + 1))
    ((n % JOBS == k)) || continue
    key=$(key_of "$rel")
    if [[ $rel != "$prev_rel" ]]; then
      first=$(first_tests "$rel")
      targets1=$(py targets "$build" "$first" <"$build.tests.json")
      targets2=$(py targets "$build" "$FAST" <"$build.tests.json")
      prev_rel=$rel
      cp -p "$tree/$rel" "$build.orig" # the snapshot's text, to restore
    fi
    t0=$(date +%s)
    status=survived killer=
    echo "$rel" >"$build.dirty"
    if [[ -f $MUT/$key/rebase ]]; then
      set +e
      py rebase "$MUT/$key/$(basename "$rel")" "$MUT/$key/m/$name" "$MUT/$key/current.c" "$build.mutant.c"
      rc=$?
      set -e
      ((rc == 0)) && cp "$build.mutant.c" "$tree/$rel" || status=stale
    elif ! cp "$MUT/$key/m/$name" "$tree/$rel"; then
      status=stale
    fi
    touch "$tree/$rel"
    rm -f "$build/CMakeFiles/meshscaler_core.dir/$rel.o"
    if [[ $status == stale ]]; then
      :
    elif ! ninja -C "$build" -j1 $targets1 >"$build.ninja.log" 2>&1; then
      status=not-compiled
    else
      res=$(run_tests "$build" "$first" "" "$TIMEOUT" "$TEST_TIMEOUT")
      if [[ $res == pass ]]; then
        used=$(($(date +%s) - t0))
        if ! ninja -C "$build" -j1 $targets2 >"$build.ninja.log" 2>&1; then
          status=not-compiled
        else
          res=$(run_tests "$build" "$FAST" "$first" "$((TIMEOUT > used + 5 ? TIMEOUT - used : 5))" "$TEST_TIMEOUT")
        fi
      fi
      if [[ $status != not-compiled && $status != stale ]]; then
        case $res in
          pass) status=survived ;;
          timeout*) status=timeout killer=${res#timeout } ;;
          killed*) status=killed killer=${res#killed } ;;
        esac
      fi
      # A survivor of the Debug build: the same mutant under the sanitizers,
      # then valgrind (the mutant is still in place in the tree).
      if [[ $status == survived && $SAN == 1 ]]; then
        res=$(recheck_sanitize "$build" "$first" "$targets1" "$targets2")
        status=${res%% *}
        [[ $res == *' '* ]] && killer=${res#* }
      fi
      if [[ $status == survived && $VG == 1 ]]; then
        res=$(recheck_valgrind "$build" "$first")
        status=${res%% *}
        [[ $res == *' '* ]] && killer="${killer:+$killer; }${res#* }"
      fi
    fi
    cp "$build.orig" "$tree/$rel"
    touch "$tree/$rel"
    rm -f "$build/CMakeFiles/meshscaler_core.dir/$rel.o" "$build.dirty"
    if [[ -f $build-san.dirty ]]; then
      rm -f "$build-san/CMakeFiles/meshscaler_core.dir/$rel.o" "$build-san.dirty"
    fi
    t1=$(date +%s)
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$id" "$rel" "$line" "$status" "$((t1 - t0))" \
      "$before" "$after" "$killer" >>"$RESULTS"
    if [[ $status == survived ]]; then
      printf 'SURVIVED %s:%s: %s  =>  %s\n' "$rel" "$line" "$before" "$after"
    fi
  done <"$QUEUE"
}

if [[ $VG == 1 ]]; then
  # The tests valgrind will run, once unmutated: a test that is not clean
  # there would "kill" every mutant.
  vg_first=$(for f in "${FILES[@]}"; do first_tests "$f"; done | sort -u | paste -sd'|')
  for ((k = 0; k < JOBS; k++)); do
    res=$(recheck_valgrind "$OUT/build$k" "$vg_first")
    if [[ $res != survived ]]; then
      log "valgrind on the unmutated tests: $res (logs: $OUT/build$k.vg); fix that first"
      exit 1
    fi
    log "worker $k: unmutated tests clean under valgrind"
  done
fi

START=$(date +%s)
pids=()
for ((k = 0; k < JOBS; k++)); do
  worker "$k" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
END=$(date +%s)

# ---- 6. report -------------------------------------------------------------------
echo
echo "== survivors =="
sort -t$'\t' -k2,2 -k3,3n "$RESULTS" | awk -F'\t' '$4 == "survived" {printf "%s:%s: %s  =>  %s\n", $2, $3, $6, $7}'
echo
if [[ ${MUT_ONLY_SURVIVORS:-0} == 1 ]]; then
  py table "$OUT/results.before.tsv" "== before (results.before.tsv) =="
  echo
fi
py table "$RESULTS" "== per file (tests = killed by a fast test, san = by ASan/UBSan, vg = by valgrind; timeouts count as killed; total = mutants that compiled; all = every mutant run) =="
echo
echo "ran $(wc -l <"$QUEUE") mutants in $((END - START)) s with $JOBS worker(s); results: $RESULTS"
exit $rc
