# lib.sh - start and stop what the Prometheus integration tests and the
# bench need: a real Prometheus (Debian package), real HAProxy instances with
# the built-in exporter, and helper.py servers. Sourced by run.sh and
# bench/prometheus.sh. Everything binds 127.0.0.1; everything started is
# recorded by PID in IT_PIDS and stopped by it_stop_all (call it from a trap).

IT_HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
IT_PIDS=()

it_log() { echo "[it] $*" >&2; }

# A free TCP port on 127.0.0.1.
it_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# it_start LOG CMD... : run CMD in the background, remember its PID (also in
# IT_LAST_PID). Never call it in $(...): the PID list would stay in the subshell.
it_start() {
  local log="$1"
  shift
  "$@" >"$log" 2>&1 &
  IT_LAST_PID=$!
  IT_PIDS+=("$IT_LAST_PID")
}

# it_stop PID : TERM, wait up to 5 s, then KILL. Only PIDs we started.
it_stop() {
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || { wait "$pid" 2>/dev/null; return 0; }
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  return 0
}

it_stop_all() {
  local pid
  for pid in "${IT_PIDS[@]}"; do it_stop "$pid"; done
  IT_PIDS=()
}

# it_wait_http URL SECONDS
it_wait_http() {
  local url="$1" secs="$2" i
  for i in $(seq 1 $((secs * 10))); do
    curl -sf -o /dev/null --max-time 1 "$url" && return 0
    sleep 0.1
  done
  it_log "no answer from $url after $secs s"
  return 1
}

# prom_start DIR PORT SCRAPE_INTERVAL [EXTRA_YAML] : Prometheus scraping itself
# and every target file in DIR/targets/*.json. PID in IT_LAST_PID.
prom_start() {
  local dir="$1" port="$2" interval="$3" extra="${4:-}"
  mkdir -p "$dir/targets" "$dir/data"
  cat >"$dir/prometheus.yml" <<YAML
global:
  scrape_interval: $interval
  evaluation_interval: $interval
scrape_configs:
- job_name: prometheus
  static_configs: [{targets: ["127.0.0.1:$port"]}]
- job_name: it
  honor_labels: true
  file_sd_configs:
  - files: ["$dir/targets/*.json"]
    refresh_interval: 1s
$extra
YAML
  it_start "$dir/prometheus.log" prometheus \
    --config.file="$dir/prometheus.yml" \
    --storage.tsdb.path="$dir/data" \
    --web.listen-address="127.0.0.1:$port" \
    --storage.tsdb.retention.time=1h \
    --query.lookback-delta=5m \
    --log.level=warn
}

# prom_target DIR NAME HOST:PORT PATH [LABEL=VALUE]... : add a scrape target.
prom_target() {
  local dir="$1" name="$2" addr="$3" path="$4" labels kv
  shift 4
  labels="\"__metrics_path__\": \"$path\", \"target\": \"$name\""
  for kv in "$@"; do labels="$labels, \"${kv%%=*}\": \"${kv#*=}\""; done
  mkdir -p "$dir/targets"
  printf '[{"targets": ["%s"], "labels": {%s}}]\n' "$addr" "$labels" >"$dir/targets/.$name.tmp"
  mv "$dir/targets/.$name.tmp" "$dir/targets/$name.json"
}

# prom_wait_up PORT TARGET SECONDS : until up{target=TARGET} == 1.
prom_wait_up() {
  local port="$1" target="$2" secs="$3" i
  for i in $(seq 1 $((secs * 2))); do
    if curl -sf --max-time 2 "http://127.0.0.1:$port/api/v1/query" \
        --data-urlencode "query=up{target=\"$target\"} == 1" | grep -q '"value"'; then
      return 0
    fi
    sleep 0.5
  done
  it_log "target $target not up after $secs s"
  return 1
}

# haproxy_start DIR NAME FRONTEND_PORT EXPORTER_PORT BACKEND_ADDR SERVER_MAXCONN
# One HAProxy standing in for one pod's sidecar: frontend NAME -> backend
# app with one server of maxconn SERVER_MAXCONN; exporter on EXPORTER_PORT.
haproxy_start() {
  local dir="$1" name="$2" fport="$3" eport="$4" backend="$5" smax="$6"
  mkdir -p "$dir"
  cat >"$dir/$name.cfg" <<CFG
global
  maxconn 2000
defaults
  mode http
  timeout connect 5s
  timeout client 120s
  timeout server 120s
  timeout queue 120s
frontend exporter
  bind 127.0.0.1:$eport
  http-request use-service prometheus-exporter if { path /metrics }
frontend $name
  bind 127.0.0.1:$fport
  maxconn 500
  default_backend app
backend app
  server app1 $backend maxconn $smax
CFG
  haproxy -c -q -f "$dir/$name.cfg" >/dev/null || { it_log "haproxy rejected $dir/$name.cfg"; return 1; }
  it_start "$dir/$name.log" haproxy -db -f "$dir/$name.cfg"
}
