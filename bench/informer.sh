#!/usr/bin/env bash
# bench/informer.sh - the informer cache's memory per object and read cost in
# both cache modes (bench/informer.c): builds the library (Release) into
# $MS_BENCH_BUILD (default build-bench-informer), compiles bench_informer
# there against it with tests/tools/fakekube.c (an in-process list/watch
# server: no control plane needed), and runs it. Prints figures only.
#
#   bench/informer.sh [N (10000)] [ROUNDS (3)]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MS_BENCH_BUILD:-$root/build-bench-informer}"
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)

cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)" --target meshscaler_core >/dev/null
# shellcheck disable=SC2046 # pkg-config's flags are words
cc -O2 -g -std=gnu11 -Wall -Wextra -Werror -I"$root/include" \
  $(pkg-config --cflags libcjson) -o "$build/bench_informer" \
  "$root/bench/informer.c" "$root/tests/tools/fakekube.c" "$build/libmeshscaler_core.a" \
  $(pkg-config --libs libcjson libcurl yaml-0.1 libwebsockets libcrypto) -lpthread -lm
"$build/bench_informer" "${1:-10000}" "${2:-3}"
