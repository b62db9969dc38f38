#!/usr/bin/env bash
# run.sh - static checks of the Helm chart (charts/meshscaler) and everything derived
# from it: no cluster needed.
#
#   tests/chart/run.sh
#
# Checks: helm lint; helm template with the default values and with several other
# value sets, each output parsed and its key facts asserted (tests/chart/check.py:
# security context, args, no plain secrets, Lease rights only in a namespaced Role,
# one scale rule per scale target, when a PDB exists, the checksum annotation, ...);
# values the schema or the templates must refuse, each with a message naming the
# value; crds/ identical to manifests/10-crd.yaml; manifests/ up to date
# (scripts/gen-manifests.sh --check); the dashboard parses and the series it and the
# alerts read are those of series.txt; every value documented; shellcheck.
#
# Installs what is missing: helm through `e2e/local tools` (e2e/.bin/helm), and as root
# the Debian packages python3-yaml and shellcheck.
# One line per check ("ok   NAME" / "FAIL NAME"), then "N passed, N failed"; exits 1
# on any failure.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
chart="$root/charts/meshscaler"
# pass, fail, check, eventually
# shellcheck source-path=SCRIPTDIR source=../lib/check.sh
. "$root/tests/lib/check.sh"
finish() { echo "$passed passed, $failed failed"; [[ $failed -eq 0 ]]; }

work="$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-chart.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# --- tools --------------------------------------------------------------------------
apt_install() { # apt_install PACKAGE: only as root; quiet unless it fails
  [[ "$(id -u)" -eq 0 ]] || return 1
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends "$1" >"$work/apt.log" 2>&1 ||
    { apt-get update -qq >>"$work/apt.log" 2>&1 && apt-get install -y -qq --no-install-recommends "$1" >>"$work/apt.log" 2>&1; }
}

# helm from `e2e/local tools helm` (built with a released helm's version flags; rebuilt
# when they change, a no-op otherwise), unless HELM names another. Its first build takes
# minutes: a progress line (e2e/lib/progress.sh) shows it.
if [[ -z "${HELM:-}" ]]; then
  HELM="$root/e2e/.bin/helm"
  PROGRESS_PREFIX="[chart]" PROGRESS_FD=1
  # shellcheck source=e2e/lib/progress.sh
  . "$root/e2e/lib/progress.sh"
  progress_run "installing helm (e2e/local tools helm)" "~2.5 min" "nothing to do" "$work/tools.log" \
    "$root/e2e/local" tools helm || { tail -n 20 "$work/tools.log"; fail "install helm (e2e/local tools)"; finish; exit 1; }
fi
export HELM
if ! python3 -c 'import yaml' 2>/dev/null; then
  apt_install python3-yaml || { fail "python3 with PyYAML (apt-get install python3-yaml)"; finish; exit 1; }
fi
if ! command -v shellcheck >/dev/null 2>&1; then
  apt_install shellcheck || fail "install shellcheck (apt-get install shellcheck)"
fi

URL=(--set prometheus.url=http://prometheus.monitoring.svc:9090)
# The renders below pin the Kubernetes version (it only feeds the chart's kubeVersion
# check), so that they hold with any helm in HELM; the first check renders without it.
KV=(--kube-version 1.31.0)

# template NAME [RELEASE] -- ARGS... : render into $work/NAME.yaml (stderr in NAME.err).
template() {
  local name="$1" release=meshscaler
  shift
  if [[ "$1" != "--" ]]; then release="$1"; shift; fi
  shift
  "$HELM" template "$release" "$chart" --namespace meshscaler-system "${KV[@]}" "$@" \
    >"$work/$name.yaml" 2>"$work/$name.err"
}

# rendered CASE ARGS... : render and assert the case's facts (check.py render CASE).
rendered() {
  local name="$1" release=meshscaler out
  shift
  [[ "$name" == release-name ]] && release=prod
  if ! template "$name" "$release" -- "$@"; then
    fail "helm template ($name): $(head -c 400 "$work/$name.err" | tr '\n' ' ')"
    return
  fi
  if out="$(python3 "$here/check.py" render "$name" "$work/$name.yaml" 2>&1)"; then
    pass "helm template ($name): key facts hold"
  else
    fail "helm template ($name): $(echo "$out" | head -n 8 | tr '\n' ';')"
  fi
}

# refused NAME PATTERN ARGS... : helm template must fail and its message match PATTERN
# (grep -E), i.e. name the value at fault.
refused() {
  local name="$1" pattern="$2"
  shift 2
  if template "refuse-$name" -- "$@"; then
    fail "refuses $name: helm template succeeded"
  elif grep -qE -- "$pattern" "$work/refuse-$name.err"; then
    pass "refuses $name: $(grep -E -m1 -- "$pattern" "$work/refuse-$name.err" | sed 's/^Error: //; s/^- //' | cut -c1-110)"
  else
    fail "refuses $name, but the message does not match /$pattern/: $(head -c 300 "$work/refuse-$name.err" | tr '\n' ' ')"
  fi
}

# --- lint and metadata -------------------------------------------------------------
# As a user renders it with the helm of `e2e/local tools` (README): no --kube-version.
# A helm without a release's version flags assumes Kubernetes 1.20 and refuses the
# chart's kubeVersion (>=1.27.0-0).
if "$HELM" template t "$chart" "${URL[@]}" >"$work/no-kube-version.yaml" 2>"$work/no-kube-version.err"; then
  pass "helm template without --kube-version renders (helm $("$HELM" version --template '{{.Version}}' 2>/dev/null))"
else
  fail "helm template without --kube-version: $(head -c 300 "$work/no-kube-version.err" | tr '\n' ' ')"
fi
if "$HELM" lint --strict "$chart" "${URL[@]}" >"$work/lint.log" 2>&1; then pass "helm lint --strict"
else fail "helm lint --strict: $(grep -E '\[(ERROR|WARNING)\]' "$work/lint.log" | head -n 3 | tr '\n' ' ')"; fi

if "$HELM" lint --strict "$chart" "${URL[@]}" --set serviceMonitor.enabled=true --set prometheusRule.enabled=true \
  --set networkPolicy.enabled=true --set grafanaDashboard.enabled=true >"$work/lint-all.log" 2>&1; then
  pass "helm lint --strict (ServiceMonitor, PrometheusRule, NetworkPolicy, dashboard on)"
else
  fail "helm lint --strict, everything on: $(grep -E '\[(ERROR|WARNING)\]' "$work/lint-all.log" | head -n 3 | tr '\n' ' ')"
fi

project_version="$(sed -nE 's/^project\(meshscaler VERSION ([0-9.]+).*/\1/p' "$root/CMakeLists.txt")"
app_version="$(sed -nE 's/^appVersion: "?([^"]*)"?$/\1/p' "$chart/Chart.yaml")"
if [[ -n "$project_version" && "$app_version" == "$project_version" ]]; then pass "Chart.yaml appVersion $app_version = CMakeLists.txt project version"
else fail "Chart.yaml appVersion '$app_version' differs from CMakeLists.txt project version '$project_version'"; fi

if cmp -s "$root/manifests/10-crd.yaml" "$chart/crds/meshautoscalers.autoscaling.meshscaler.io.yaml"; then
  pass "crds/ is identical to manifests/10-crd.yaml"
else
  fail "charts/meshscaler/crds/meshautoscalers.autoscaling.meshscaler.io.yaml differs from manifests/10-crd.yaml (cp manifests/10-crd.yaml over it)"
fi

if out="$(python3 "$here/check.py" values "$chart" 2>&1)"; then pass "every value is documented (# --) and in the chart README"
else fail "values documentation: $(echo "$out" | head -n 5 | tr '\n' ';')"; fi

if "$HELM" package "$chart" --destination "$work/pkg" >"$work/package.log" 2>&1 &&
  tar -tzf "$work"/pkg/meshscaler-*.tgz >"$work/pkg.list" 2>/dev/null &&
  grep -q 'meshscaler/dashboards/meshscaler.json' "$work/pkg.list" && ! grep -q 'series.txt' "$work/pkg.list"; then
  pass "helm package: the dashboard is in, series.txt is not"
else
  fail "helm package: $(tail -n 2 "$work/package.log" | tr '\n' ' ')"
fi

# --- rendering: value sets ------------------------------------------------------------
rendered default "${URL[@]}"
rendered release-name "${URL[@]}"
rendered all-on "${URL[@]}" \
  --set serviceMonitor.enabled=true --set serviceMonitor.labels.release=kps \
  --set prometheusRule.enabled=true --set prometheusRule.additionalAlertLabels.team=platform \
  --set prometheusRule.alerts.syncErrors.for=20m --set prometheusRule.alerts.prometheusFailures.ratio=0.25 \
  --set networkPolicy.enabled=true --set grafanaDashboard.enabled=true \
  --set 'networkPolicy.ingress.from[0].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name=monitoring'
rendered leader-off "${URL[@]}" --set leaderElection.enabled=false --set replicaCount=1
rendered dry-run "${URL[@]}" --set controller.dryRun=true --set replicaCount=1
rendered bearer-token "${URL[@]}" --set prometheus.bearerToken.secretName=prom-token \
  --set prometheus.bearerToken.key=tok --set prometheus.ca.configMapName=prom-ca \
  --set-string 'prometheus.headers[0]=X-Scope-OrgID: team-a' --set prometheus.timeout=5s
rendered basic-auth "${URL[@]}" --set prometheus.basicAuth.username=alice \
  --set prometheus.basicAuth.passwordSecret.name=prom-basic \
  --set prometheus.ca.secretName=prom-ca --set prometheus.ca.key=root.pem
cat >"$work/scale-targets.values.yaml" <<'EOF'
rbac:
  scaleTargets:
    - apiGroup: apps
      resources: [deployments]
    - apiGroup: example.com
      resources: [widgets, gadgets]
EOF
rendered scale-targets "${URL[@]}" -f "$work/scale-targets.values.yaml"
cat >"$work/options.values.yaml" <<'EOF'
image:
  repository: registry.example/meshscaler
  tag: 1.2.3
  digest: sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
controller:
  watchNamespace: shop
  kubeApiQps: 50
  kubeApiBurst: 100
  syncPeriod: 1m30s
  concurrentSyncs: 16
  logFormat: text
  logLevel: debug
extraArgs: ["--prometheus-timeout=3s", "--output=table"]
extraEnv: [{name: EXTRA, value: "1"}]
extraVolumes: [{name: scratch, emptyDir: {}}]
extraVolumeMounts: [{name: scratch, mountPath: /scratch}]
podDisruptionBudget: {maxUnavailable: 1}
EOF
rendered options "${URL[@]}" -f "$work/options.values.yaml"
rendered pdb-force "${URL[@]}" --set replicaCount=1 --set podDisruptionBudget.force=true
rendered netpol-default "${URL[@]}" --set networkPolicy.enabled=true
rendered watch-namespace "${URL[@]}" --set controller.watchNamespace=shop
rendered watch-namespace-plain "${URL[@]}" --set controller.watchNamespace=shop --set metrics.secure=false
rendered cert-manager "${URL[@]}" --set metrics.certificate.source=certManager --set serviceMonitor.enabled=true
rendered cert-none "${URL[@]}" --set metrics.certificate.source=none

# --- refusals: the schema, then the templates' checks -------------------------------
refused "no prometheus.url" 'prometheus\.url is required'
refused "a URL without a scheme" "/prometheus/url'.*does not match" --set prometheus.url=prometheus.monitoring:9090
refused "replicaCount -1" "/replicaCount'.*minimum" "${URL[@]}" --set replicaCount=-1
refused "concurrentSyncs 0" "/controller/concurrentSyncs'.*minimum" "${URL[@]}" --set controller.concurrentSyncs=0
refused "concurrentSyncs 257" "/controller/concurrentSyncs'.*maximum" "${URL[@]}" --set controller.concurrentSyncs=257
refused "logLevel verbose" "/controller/logLevel'.*one of" "${URL[@]}" --set controller.logLevel=verbose
refused "logFormat xml" "/controller/logFormat'.*one of" "${URL[@]}" --set controller.logFormat=xml
refused "an unknown top-level key" "additional properties 'replicaCout'" "${URL[@]}" --set replicaCout=3
refused "an unknown controller key" "/controller'.*additional properties 'watchnamespace'" "${URL[@]}" --set controller.watchnamespace=shop
refused 'syncPeriod "15"' "/controller/syncPeriod'.*does not match" "${URL[@]}" --set-string controller.syncPeriod=15
refused "syncPeriod 15 (a number)" "/controller/syncPeriod'.*want string" "${URL[@]}" --set controller.syncPeriod=15
refused "pullPolicy Sometimes" "/image/pullPolicy'" "${URL[@]}" --set image.pullPolicy=Sometimes
refused "kubeApiQps 0" "/controller/kubeApiQps'" "${URL[@]}" --set controller.kubeApiQps=0
refused "a bad digest" "/image/digest'" "${URL[@]}" --set image.digest=latest
refused "two replicas without leader election" 'leaderElection\.enabled=false needs replicaCount' "${URL[@]}" --set leaderElection.enabled=false
refused "a ServiceMonitor that cannot verify" 'serviceMonitor with metrics\.certificate\.source=none needs serviceMonitor\.tlsConfig' "${URL[@]}" \
  --set metrics.certificate.source=none --set serviceMonitor.enabled=true
refused "a ServiceMonitor elsewhere without its CA" 'serviceMonitor\.namespace monitoring needs serviceMonitor\.tlsConfig' "${URL[@]}" \
  --set serviceMonitor.enabled=true --set serviceMonitor.namespace=monitoring
refused "certificate source unknown" "/metrics/certificate/source'" "${URL[@]}" --set metrics.certificate.source=selfsigned
refused "a password in the URL" 'prometheus\.url: no user or password' --set prometheus.url=http://admin:secret@prometheus:9090
refused "an Authorization header" 'prometheus\.headers: no Authorization' "${URL[@]}" --set-string 'prometheus.headers[0]=Authorization: Bearer x'
refused "basic auth without a password Secret" 'prometheus\.basicAuth\.username needs' "${URL[@]}" --set prometheus.basicAuth.username=alice
refused "a bearer token and basic auth" 'prometheus\.bearerToken\.secretName and prometheus\.basicAuth\.username' "${URL[@]}" \
  --set prometheus.bearerToken.secretName=t --set prometheus.basicAuth.username=a --set prometheus.basicAuth.passwordSecret.name=p

# --- the controller accepts the flags the chart renders ------------------------------
# When a meshscaler binary is at hand ($MS_BIN, $MS_BUILD_DIR/meshscaler, or a build*/
# directory), every rendered value set's args must pass its flag parser: it then stops
# at the missing kubeconfig ("cannot start", exit 1) instead of refusing a flag (exit 2).
# The credential files the args name are stand-ins in a scratch directory.
ms_bin="${MS_BIN:-}"
if [[ -z "$ms_bin" && -n "${MS_BUILD_DIR:-}" ]]; then ms_bin="$MS_BUILD_DIR/meshscaler"; fi
if [[ -z "$ms_bin" ]]; then
  for b in "$root"/build-release/meshscaler "$root"/build/meshscaler "$root"/build*/meshscaler; do
    if [[ -x "$b" ]]; then ms_bin="$b"; break; fi
  done
fi
if [[ -x "$ms_bin" ]]; then
  accepted=() refused_by=()
  for f in "$work"/*.yaml; do
    name="$(basename "$f" .yaml)"
    [[ "$name" == refuse-* || "$name" == rules || "$name" == *.values ]] && continue
    mkdir -p "$work/creds/$name"
    mapfile -d '' args < <(python3 - "$f" "$work/creds/$name" <<'PY'
import sys, os, yaml
creds = sys.argv[2]
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d and d.get("kind") == "Deployment":
        for a in d["spec"]["template"]["spec"]["containers"][0]["args"]:
            if a.startswith("--") and "-file=/etc/meshscaler/" in a:
                flag, path = a.split("=", 1)
                local = os.path.join(creds, path.replace("/", "_"))
                with open(local, "w") as out:
                    out.write("stand-in\n")
                a = f"{flag}={local}"
            sys.stdout.write(a + "\0")
PY
    )
    rc=0
    KUBECONFIG=/nonexistent ASAN_OPTIONS=detect_leaks=0 timeout 20 "$ms_bin" "${args[@]}" \
      --kubeconfig="$work/no-such-kubeconfig" >"$work/$name.ctl.out" 2>&1 || rc=$?
    if [[ $rc == 1 ]] && grep -q 'cannot start' "$work/$name.ctl.out"; then accepted+=("$name")
    else refused_by+=("$name (exit $rc: $(head -c 200 "$work/$name.ctl.out" | tr '\n' ' '))"); fi
  done
  if [[ ${#refused_by[@]} -eq 0 ]]; then pass "${ms_bin#"$root/"} accepts the args of ${#accepted[@]} rendered value sets"
  else fail "${ms_bin#"$root/"} refuses the rendered args of: ${refused_by[*]}"; fi
else
  echo "note: no meshscaler binary (MS_BIN, MS_BUILD_DIR or build*/): the rendered args were not parsed by the controller"
fi

# --- derived files ---------------------------------------------------------------------
if out="$("$root/scripts/gen-manifests.sh" --check 2>&1)"; then pass "manifests/ is what scripts/gen-manifests.sh renders"
else fail "scripts/gen-manifests.sh --check: $(echo "$out" | head -n 12 | tr '\n' ';')"; fi

if template rules -- "${URL[@]}" --set prometheusRule.enabled=true --show-only templates/prometheusrule.yaml &&
  out="$(python3 "$here/check.py" series "$chart" "$work/rules.yaml" 2>&1)"; then
  pass "the dashboard parses; the series it and the alerts read are those of series.txt ($(grep -c . "$chart/series.txt"))"
else
  fail "dashboard and series: ${out:-$(head -c 300 "$work/rules.err")}"
fi

kind_yaml=("$root"/e2e/kind/*.yaml)
if [[ -e "${kind_yaml[0]}" ]]; then
  if out="$(python3 "$here/check.py" yaml "${kind_yaml[@]}" 2>&1)"; then pass "e2e/kind/*.yaml parse"
  else fail "e2e/kind/*.yaml: $out"; fi
fi

if command -v shellcheck >/dev/null 2>&1; then
  scripts=("$root/scripts/gen-manifests.sh" "$here/run.sh")
  for f in "$root"/e2e/kind/*.sh; do [[ -e "$f" ]] && scripts+=("$f"); done
  [[ -e "$root/e2e/kind/labenv" ]] && scripts+=("$root/e2e/kind/labenv")
  if out="$(shellcheck -x "${scripts[@]}" 2>&1)"; then pass "shellcheck: ${scripts[*]#"$root/"}"
  else fail "shellcheck: $(echo "$out" | head -n 12 | tr '\n' ';')"; fi
fi

finish
