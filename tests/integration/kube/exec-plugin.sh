#!/bin/sh
# exec-plugin.sh TOKEN_FILE - a client.authentication.k8s.io/v1 exec credential
# plugin for the tests: prints an ExecCredential carrying the token in
# TOKEN_FILE, valid for $PLUGIN_TTL seconds, and appends a line to
# $PLUGIN_RUNS each time it runs (so tests can count the runs).
set -eu
case "${KUBERNETES_EXEC_INFO:-}" in
  *'"apiVersion":"client.authentication.k8s.io/v1"'*) ;;
  *) echo "exec-plugin.sh: KUBERNETES_EXEC_INFO missing or not v1" >&2; exit 1 ;;
esac
[ -n "${PLUGIN_RUNS:-}" ] && echo run >> "$PLUGIN_RUNS"
token="$(cat "$1")"
expires="$(date -u -d "+${PLUGIN_TTL:-3600} seconds" +%Y-%m-%dT%H:%M:%SZ)"
printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$token" "$expires"
