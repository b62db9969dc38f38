#!/usr/bin/env bash
# run.sh - the Prometheus client and metric-source integration tests, against
# a real Prometheus (Debian 2.42) scraping real HAProxy (Debian 2.6, built-in
# exporter) instances that carry real traffic, plus recorded Envoy, Linkerd,
# cAdvisor and kube-state-metrics exposition served as scrape targets.
#
#   tests/integration/prom/run.sh            build (ASan+UBSan), start, test, stop
#   tests/integration/prom/run.sh --record   start, then re-record tests/fixtures/prom
#
# Everything listens on 127.0.0.1 at free ports and is stopped by PID on exit.
# Build directory: $MS_IT_BUILD (default build-it at the top of the repo; the
# Sanitize build-san of scripts/test.sh works too); extra CMake arguments in
# $MS_IT_CMAKE_ARGS.
# Ends with "N passed, N failed"; exits non-zero when any test failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
build="${MS_IT_BUILD:-$root/build-it}"
mode="${1:-test}"
# shellcheck source=lib.sh
source "$here/lib.sh"

work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-it-prom.XXXXXX")"
cleanup() {
  it_stop_all
  if [[ "${MS_IT_KEEP:-0}" == 1 ]]; then it_log "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

passed=0
failed=0
result() { # result NAME RC
  if [[ "$2" -eq 0 ]]; then passed=$((passed + 1)); echo "PASS $1"
  elif [[ "$2" -eq 77 && "${CI:-}" != true ]]; then echo "SKIP $1"
  elif [[ "$2" -eq 77 ]]; then failed=$((failed + 1)); echo "FAIL $1 skipped (exit 77), and nothing may skip under CI=true"
  else failed=$((failed + 1)); echo "FAIL $1 (exit $2)"; fi
}
finish() { echo "$passed passed, $failed failed"; [[ $failed -eq 0 ]]; exit $?; }

need() {
  local missing=()
  for c in prometheus haproxy python3 curl openssl cmake ninja; do
    command -v "$c" >/dev/null || missing+=("$c")
  done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "missing: ${missing[*]} (apt-get install -y --no-install-recommends prometheus haproxy python3 curl openssl cmake ninja-build)"
    failed=1
    finish
  fi
}

build_it() { # build_it TARGET...
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Sanitize ${MS_IT_CMAKE_ARGS:-} >"$work/cmake.log" 2>&1 &&
    ninja -C "$build" "$@" >"$work/build.log" 2>&1 ||
    { cat "$work/cmake.log" "$work/build.log" | tail -n 40; failed=1; finish; }
}

# The TLS front door's certificate: self-signed for 127.0.0.1, one day.
make_cert() {
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1" \
    -keyout "$work/tls.key" -out "$work/tls.crt" >/dev/null 2>&1 || return 1
  cat "$work/tls.crt" "$work/tls.key" >"$work/tls.pem"
}

# HAProxy in front of Prometheus the way clusters put auth proxies in front
# of it: a bearer-token + tenant door, a basic-auth door and a TLS door.
start_front_doors() {
  cat >"$work/doors.cfg" <<CFG
global
  maxconn 200
defaults
  mode http
  timeout connect 5s
  timeout client 60s
  timeout server 60s
userlist promusers
  user alice insecure-password s3cret
frontend bearer
  bind 127.0.0.1:$BEARER_PORT
  http-request deny deny_status 401 unless { req.hdr(authorization) -m str "Bearer tok-2" }
  http-request deny deny_status 403 unless { req.hdr(x-scope-orgid) -m str team-a }
  default_backend prom
frontend basic
  bind 127.0.0.1:$BASIC_PORT
  http-request auth realm prometheus unless { http_auth(promusers) }
  default_backend prom
frontend tls
  bind 127.0.0.1:$TLS_PORT ssl crt $work/tls.pem
  default_backend prom
backend prom
  server prom 127.0.0.1:$PROM_PORT
CFG
  haproxy -c -q -f "$work/doors.cfg" >/dev/null || return 1
  it_start "$work/doors.log" haproxy -db -f "$work/doors.cfg"
}

setup() {
  PROM_PORT=$(it_port); BACKEND_PORT=$(it_port); EXPORTER_PORT=$(it_port); BAD_PORT=$(it_port)
  BEARER_PORT=$(it_port); BASIC_PORT=$(it_port); TLS_PORT=$(it_port); DELAY_PORT=$(it_port)
  make_cert || { echo "openssl could not make a certificate"; failed=1; finish; }

  it_start "$work/backend.log" python3 "$here/helper.py" backend "$BACKEND_PORT"
  it_start "$work/exporter.log" python3 "$here/helper.py" exporter "$EXPORTER_PORT" "$here/exporters"
  it_start "$work/misbehave.log" python3 "$here/helper.py" misbehave "$BAD_PORT"

  # Three HAProxy "sidecars": two pods of Deployment shop/web (server maxconn
  # 20 each) and the one pod of StatefulSet edge/gw (server maxconn 10).
  declare -gA HAP_PORT
  local spec name ns pod smax fport eport
  for spec in "web-a shop web-5f7d8c9b4-k2x7p 20" "web-b shop web-5f7d8c9b4-m4n8q 20" "gw edge gw-0 10"; do
    read -r name ns pod smax <<<"$spec"
    fport=$(it_port); eport=$(it_port)
    haproxy_start "$work/haproxy" "$name" "$fport" "$eport" "127.0.0.1:$BACKEND_PORT" "$smax" ||
      { failed=1; finish; }
    HAP_PORT[$name]=$fport
    prom_target "$work/prom" "haproxy-$name" "127.0.0.1:$eport" /metrics "namespace=$ns" "pod=$pod"
  done

  # Remote read from a dead endpoint, only for queries that ask for it with
  # remote="yes": Prometheus then answers with "warnings", as it does when a
  # secondary store fails.
  prom_start "$work/prom" "$PROM_PORT" 1s "remote_read:
- url: http://127.0.0.1:1/api/v1/read
  read_recent: true
  required_matchers: {remote: \"yes\"}"
  PROM_PID=$IT_LAST_PID
  local e="127.0.0.1:$EXPORTER_PORT"
  prom_target "$work/prom" envoy-api-1 "$e" /envoy-api-1 namespace=shop pod=api-7d4b9c8f6d-x2k4p
  prom_target "$work/prom" envoy-api-2 "$e" /envoy-api-2 namespace=shop pod=api-7d4b9c8f6d-q8w9e
  prom_target "$work/prom" envoy-web-0 "$e" /envoy-web-0 namespace=mesh pod=web-0
  prom_target "$work/prom" linkerd-reviews-1 "$e" /linkerd-api-1 namespace=books pod=reviews-5d8f7c9b6-7xk2p
  prom_target "$work/prom" linkerd-reviews-2 "$e" /linkerd-api-2 namespace=books pod=reviews-5d8f7c9b6-9pq4z
  prom_target "$work/prom" haproxy-lagging "$e" /haproxy-lagging namespace=old pod=lag-0
  prom_target "$work/prom" cadvisor "$e" /cadvisor
  prom_target "$work/prom" kube-state-metrics "$e" /kube-state-metrics
  start_front_doors || { echo "front-door haproxy failed"; failed=1; finish; }
  # One tenant's slow queries: 5.5 s each, as in issue 23's reproduction.
  it_start "$work/delay.log" python3 "$here/helper.py" delay "$DELAY_PORT" "$PROM_PORT" 5.5

  it_wait_http "http://127.0.0.1:$PROM_PORT/-/ready" 30 || { failed=1; finish; }
  local t
  for t in haproxy-web-a haproxy-web-b haproxy-gw envoy-api-1 envoy-api-2 envoy-web-0 \
           linkerd-reviews-1 linkerd-reviews-2 haproxy-lagging cadvisor kube-state-metrics; do
    prom_wait_up "$PROM_PORT" "$t" 30 || { tail -n 20 "$work/prom/prometheus.log"; failed=1; finish; }
  done
  # rate() over the 5 s window reads low until the counters have a full
  # window of samples behind them.
  sleep 6

  export MS_IT_PROM_URL="http://127.0.0.1:$PROM_PORT" MS_IT_PROM_PID="$PROM_PID"
  export MS_IT_BAD_URL="http://127.0.0.1:$BAD_PORT" MS_IT_DELAY_URL="http://127.0.0.1:$DELAY_PORT"
  export MS_IT_BEARER_URL="http://127.0.0.1:$BEARER_PORT" MS_IT_BASIC_URL="http://127.0.0.1:$BASIC_PORT"
  export MS_IT_TLS_URL="https://127.0.0.1:$TLS_PORT" MS_IT_TLS_CA="$work/tls.crt"
  export MS_IT_HELPER="$here/helper.py" MS_IT_TMP="$work" MS_IT_RATE_WINDOW=5s
  export MS_IT_HAPROXY_WEB_A="${HAP_PORT[web-a]}" MS_IT_HAPROXY_WEB_B="${HAP_PORT[web-b]}"
  export MS_IT_HAPROXY_GW="${HAP_PORT[gw]}"
}

record() {
  local dir="$work/presets"
  mkdir -p "$dir"
  # The exporters' counters are seconds old: a short rate window (as the
  # tests use) keeps rate() from averaging over time before they existed.
  local w=(--print-query --window "$MS_IT_RATE_WINDOW")
  "$build/bench_prometheus" "${w[@]}" envoy >"$dir/envoy.promql"
  "$build/bench_prometheus" "${w[@]}" haproxy >"$dir/haproxy.promql"
  "$build/bench_prometheus" "${w[@]}" linkerd >"$dir/linkerd.promql"
  "$build/bench_prometheus" "${w[@]}" cpu istio-proxy linkerd-proxy >"$dir/cpu.promql"
  # Sessions in flight on the web pods while the haproxy preset is recorded.
  python3 "$here/helper.py" load 127.0.0.1 "$MS_IT_HAPROXY_WEB_A" 12 8 &
  local l1=$!
  python3 "$here/helper.py" load 127.0.0.1 "$MS_IT_HAPROXY_WEB_B" 4 8 &
  local l2=$!
  sleep 4
  "$root/tests/fixtures/prom/record.sh" "$MS_IT_PROM_URL" "$dir"
  wait "$l1" "$l2"
}

need
if [[ "$mode" == --record ]]; then
  build_it bench_prometheus
  setup
  record
  exit 0
fi
build_it prom_it
setup

# ASan reports leaks at exit; UBSan stops at the first finding.
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# cmocka prints one line per test; the binary's exit code is its verdict.
# The last group stops Prometheus, so it runs last.
# MS_IT_GROUPS="fairness" runs some groups only (while iterating).
for group in ${MS_IT_GROUPS:-presets haproxy queries failures auth batching fairness stopped}; do
  "$build/tests/integration/prom/prom_it" "$group" 2>&1 | sed "s/^/[$group] /"
  result "integration.prom_it.$group" "${PIPESTATUS[0]}"
done
finish
