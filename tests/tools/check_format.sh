#!/usr/bin/env bash
# tests/tools/check_format.sh — fail when a C file of the repository differs from what
# clang-format makes of it with the root's .clang-format (ctest lint.format).
#
# The reference is Debian bookworm's clang-format 14 (scripts/install-deps.sh build
# installs it): another version may format a line differently, so a missing or other
# major version skips (exit 77), which CI=true turns into a failure (scripts/test.sh).
# To fix what it names: clang-format -i FILE... (the whole tree: tests/tools/check_format.sh --fix).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cf="${CLANG_FORMAT:-clang-format}"
want_major=14
if ! command -v "$cf" >/dev/null 2>&1; then
  echo "lint.format: $cf not found (scripts/install-deps.sh build installs it): skipped"
  exit 77
fi
major="$("$cf" --version | sed -n 's/.*version \([0-9]*\).*/\1/p' | head -n 1)"
if [ "$major" != "$want_major" ]; then
  echo "lint.format: $cf is version ${major:-unknown}, the reference is $want_major: skipped"
  exit 77
fi
cd "$root" || exit 1
# The project's own C files: tracked ones in a clone, else the source folders.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.c' '*.h')
else
  mapfile -t files < <(find src include cmd tests bench e2e -path '*/.*' -prune -o -name '*.[ch]' -print)
fi
if [ "${1:-}" = --fix ]; then
  # Twice: clang-format 14 is not idempotent on a few constructs (a second pass moves
  # what the first one made; measured on this tree: 1 file of 220).
  "$cf" -i "${files[@]}" && "$cf" -i "${files[@]}"
  exit $?
fi
bad=0
for f in "${files[@]}"; do
  if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
    echo "lint.format: $f differs from clang-format's output (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done
echo "lint.format: ${#files[@]} files, $bad to format"
[ "$bad" -eq 0 ]
