#!/usr/bin/env bash
# apiserver.sh - what the watch tests do to the control plane of e2e/local:
# stop and start its kube-apiserver (etcd and its data stay), run a second
# kube-apiserver on the same etcd (so objects can change while the first one
# is down), and compact etcd (so old resourceVersions expire).
#
#   apiserver.sh stop                 SIGTERM the kube-apiserver, wait for it to exit
#   apiserver.sh start                start it again with the same command line; wait for /readyz
#   apiserver.sh second-start [FLAG]...  start a second kube-apiserver (extra flags appended);
#                                     prints its admin kubeconfig path (the restricted one is
#                                     apiserver2.restricted.kubeconfig beside it)
#   apiserver.sh second-stop
#   apiserver.sh compact              compact etcd at its current revision; prints the revision
#
# Works on the state dir of $MESHSCALER_E2E_STATE, using the PID files e2e/local
# keeps there, so `e2e/local down` still stops whatever this started.
# (Until e2e/local grows `restart`/`compact`; then this can call those.)
set -euo pipefail
STATE="${MESHSCALER_E2E_STATE:?set MESHSCALER_E2E_STATE (eval \"\$(e2e/local env)\")}"
. "$STATE/ports.env"
PIDS="$STATE/pids"
LOGS="$STATE/logs"
PKI="$STATE/pki"
CMDLINE="$STATE/kube-apiserver.cmdline"

die() { echo "apiserver.sh: $*" >&2; exit 1; }

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

stop_pid() { # stop_pid NAME
  local pid; pid="$(cat "$PIDS/$1.pid" 2>/dev/null || true)"
  alive "$pid" || { rm -f "$PIDS/$1.pid"; return 0; }
  # Only ever a process of this state dir.
  tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF "$STATE" || die "pid $pid is not ours"
  kill -TERM "$pid"
  for _ in $(seq 1 150); do alive "$pid" || break; sleep 0.1; done
  alive "$pid" && kill -KILL "$pid"
  for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
  rm -f "$PIDS/$1.pid"
}

ready() { # ready PORT
  curl -sf --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
    "https://127.0.0.1:$1/readyz" >/dev/null 2>&1
}

wait_ready() { # wait_ready PORT PIDNAME
  for _ in $(seq 1 300); do
    ready "$1" && return 0
    alive "$(cat "$PIDS/$2.pid")" || die "$2 exited (log: $LOGS/$2.log)"
    sleep 0.2
  done
  die "$2 not ready after 60 s"
}

save_cmdline() {
  local pid; pid="$(cat "$PIDS/kube-apiserver.pid")"
  alive "$pid" || die "kube-apiserver is not running"
  cp "/proc/$pid/cmdline" "$CMDLINE"
}

launch() { # launch NAME ARGS...   (argv from a NUL-separated file is passed by the caller)
  local name="$1"; shift
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! > "$PIDS/$name.pid"
}

case "${1:-}" in
  stop)
    [ -f "$CMDLINE" ] || save_cmdline
    stop_pid kube-apiserver ;;
  start)
    [ -f "$CMDLINE" ] || die "no saved command line (stop it with this script first)"
    mapfile -d '' argv < "$CMDLINE"
    launch kube-apiserver "${argv[@]}"
    wait_ready "$APISERVER_PORT" kube-apiserver ;;
  second-start)
    shift
    [ -f "$CMDLINE" ] || save_cmdline
    mapfile -d '' argv < "$CMDLINE"
    port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
    mkdir -p "$STATE/apiserver2"
    for i in "${!argv[@]}"; do
      case "${argv[$i]}" in
        --secure-port=*) argv[$i]="--secure-port=$port" ;;
        --cert-dir=*) argv[$i]="--cert-dir=$STATE/apiserver2" ;;
      esac
    done
    launch kube-apiserver-2 "${argv[@]}" "$@"
    echo "$port" > "$STATE/apiserver2.port"
    wait_ready "$port" kube-apiserver-2
    sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:$port#" "$STATE/kubeconfig" > "$STATE/apiserver2.kubeconfig"
    sed "s#https://127.0.0.1:$APISERVER_PORT#https://127.0.0.1:$port#" "$STATE/restricted.kubeconfig" > "$STATE/apiserver2.restricted.kubeconfig"
    echo "$STATE/apiserver2.kubeconfig" ;;
  second-stop)
    stop_pid kube-apiserver-2 ;;
  compact)
    rev="$(curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/range" -d '{"key":"AA==","limit":1}' \
      | python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])')"
    curl -sf -X POST "http://127.0.0.1:$ETCD_PORT/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
    echo "$rev" ;;
  *) sed -n '2,18p' "$0" >&2; exit 2 ;;
esac
