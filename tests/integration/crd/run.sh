#!/usr/bin/env bash
# The MeshAutoscaler CRD against a real kube-apiserver: valid objects are
# stored with their defaults, invalid ones are refused with a message a user
# understands, and the printer columns are those of `kubectl get hpa`.
#
# Needs KUBECTL and KUBECONFIG (eval "$(e2e/local env)"); exits 77 without them.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
if [[ -z "${KUBECTL:-}" || -z "${KUBECONFIG:-}" ]]; then
  echo "crd: no cluster (run inside: eval \"\$(e2e/local env)\"); skipped"
  exit 77
fi
k() { "$KUBECTL" "$@"; }
# pass, fail, check, eventually
# shellcheck source-path=SCRIPTDIR source=../../lib/check.sh
. "$root/tests/lib/check.sh"

k apply -f "$root/manifests/10-crd.yaml" >/dev/null || { echo "crd: apply failed"; echo "0 passed, 1 failed"; exit 1; }
k wait --for=condition=Established --timeout=30s crd/meshautoscalers.autoscaling.meshscaler.io >/dev/null
# A namespace of its own per run: a deleted one lingers while it terminates.
ns="crd-test-$$-$RANDOM"
k create namespace "$ns" >/dev/null || { echo "crd: cannot create namespace $ns"; echo "0 passed, 1 failed"; exit 1; }

# --- a valid object, and the defaults the API server fills in
if out=$(k apply -n "$ns" -f "$here/valid-full.yaml" 2>&1); then pass "the full example (docs/decision-rules.md) is accepted"; else fail "the full example (docs/decision-rules.md) is refused: $out"; fi
get() { k get mas api -n "$ns" -o "jsonpath=$1"; }
check_default() { # jsonpath expected what
  local got
  got="$(get "$1")"
  if [[ "$got" == "$2" ]]; then pass "default $3 = $2"; else fail "default $3: want $2, got '$got'"; fi
}
check_default '{.spec.dryRun}' false dryRun
check_default '{.spec.guardrails.downstream[0].maxUtilization}' 0.7 maxUtilization
check_default '{.spec.guardrails.retryStorm.threshold}' 0.3 retryStorm.threshold
check_default '{.spec.fallback.failureThreshold}' 3 fallback.failureThreshold
check_default '{.spec.fallback.mode}' CurrentIfHigher fallback.mode
header="$(k get mas -n "$ns" 2>&1 | head -n 1)"
if [[ "$header" =~ ^NAME\ +REFERENCE\ +TARGETS\ +MINPODS\ +MAXPODS\ +REPLICAS\ +DESIRED\ +REASON\ +AGE ]]; then
  pass "printer columns: $header"
else
  fail "printer columns: $header"
fi
if k get meshautoscaler api -n "$ns" >/dev/null 2>&1 && k get mas api -n "$ns" >/dev/null 2>&1; then
  pass "short name mas and singular work"
else
  fail "short name or singular missing"
fi
status_patch='{"status":{"observedGeneration":1,"reference":"Deployment/api","currentReplicas":4,"desiredReplicas":8,"conditions":[{"type":"AbleToScale","status":"True","reason":"SucceededRescale","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}'
if out=$(k patch mas api -n "$ns" --subresource=status --type=merge -p "$status_patch" 2>&1); then
  pass "status subresource takes a status"
else
  fail "status subresource: $out"
fi

# --- invalid objects: NAME | yq-free JSON patch on the valid object | expected message
refuse() { # name, json merge patch applied to the valid spec, expected substring
  local name="$1" patch="$2" want="$3" obj out
  obj="$(k create --dry-run=client -f "$here/valid-full.yaml" -o json 2>/dev/null |
    python3 -c 'import json,sys; o=json.load(sys.stdin); p=json.loads(sys.argv[1])
def merge(a,b):
    for k,v in b.items():
        if v is None: a.pop(k,None)
        elif isinstance(v,dict) and isinstance(a.get(k),dict): merge(a[k],v)
        else: a[k]=v
merge(o,p); o["metadata"]["name"]="bad"; o["metadata"].pop("namespace",None); print(json.dumps(o))' "$patch")"
  if out=$(printf '%s' "$obj" | k create -n "$ns" -f - 2>&1); then
    fail "$name: accepted"
    k delete mas bad -n "$ns" >/dev/null 2>&1
  elif [[ "$out" == *"$want"* ]]; then
    pass "$name: refused ($want)"
  else
    fail "$name: refused, but without \"$want\": $out"
  fi
}
m_sidecar='{"name":"sidecar","type":"SidecarConcurrency","sidecarConcurrency":{"proxy":"envoy"},"target":{"type":"Utilization","averageUtilization":70}}'
refuse "minReplicas above maxReplicas" '{"spec":{"minReplicas":50}}' "minReplicas must be less than or equal to maxReplicas"
refuse "no metrics" '{"spec":{"metrics":[]}}' "spec.metrics"
refuse "duplicate metric names" "{\"spec\":{\"metrics\":[$m_sidecar,$m_sidecar],\"guardrails\":null}}" "metric names must be unique"
refuse "source block of another type" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","sidecarCPU":{"container":"c"},"target":{"type":"Utilization","averageUtilization":70}}],"guardrails":null}}' "exactly the source block of its type"
refuse "target field of another type" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"Utilization","averageValue":"5"}}],"guardrails":null}}' "exactly the field of its type"
refuse "unknown target type" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"Average","averageValue":"5"}}],"guardrails":null}}' 'Unsupported value: "Average"'
refuse "quantity that is not one" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"AverageValue","averageValue":"lots"}}],"guardrails":null}}' "must be a positive quantity"
refuse "zero target" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"Value","value":0}}],"guardrails":null}}' "must be a positive quantity"
refuse "utilization 0" '{"spec":{"metrics":[{"name":"x","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"Utilization","averageUtilization":0}}],"guardrails":null}}' "averageUtilization"
refuse "unknown proxy" '{"spec":{"metrics":[{"name":"sidecar","type":"SidecarConcurrency","sidecarConcurrency":{"proxy":"nginx"},"target":{"type":"Utilization","averageUtilization":70}}]}}' 'Unsupported value: "nginx"'
refuse "downstream without a limit" '{"spec":{"guardrails":{"downstream":[{"name":"lb","usageQuery":"u","perReplica":4}]}}}' "a downstream needs limit or limitQuery"
refuse "maxUtilization above 1" '{"spec":{"guardrails":{"downstream":[{"name":"lb","usageQuery":"u","limit":100,"perReplica":4,"maxUtilization":1.5}]}}}' "maxUtilization must be in (0, 1]"
refuse "retry threshold 1" '{"spec":{"guardrails":{"retryStorm":{"retryShareQuery":"q","threshold":1}}}}' "threshold must be in [0, 1)"
refuse "saturation of an unknown metric" '{"spec":{"guardrails":{"saturation":[{"metric":"nope","rejectedQuery":"r","admittedQuery":"a"}]}}}' "must name a metric of spec.metrics"
refuse "policy period too long" '{"spec":{"behavior":{"scaleUp":{"policies":[{"type":"Pods","value":4,"periodSeconds":1801}]}}}}' "periodSeconds"
refuse "window too long" '{"spec":{"behavior":{"scaleDown":{"stabilizationWindowSeconds":3601}}}}' "stabilizationWindowSeconds"
refuse "negative tolerance" '{"spec":{"behavior":{"scaleUp":{"tolerance":"-0.1"}}}}' "tolerance must be a non-negative quantity"
refuse "fallback without replicas" '{"spec":{"fallback":{"failureThreshold":2,"replicas":null}}}' "spec.fallback.replicas: Required value"
refuse "bad metric name" '{"spec":{"metrics":[{"name":"no spaces","type":"Prometheus","prometheus":{"query":"q"},"target":{"type":"Value","value":1}}],"guardrails":null}}' "spec.metrics[0].name"
refuse "missing scaleTargetRef" '{"spec":{"scaleTargetRef":null}}' "scaleTargetRef"
# The query text of one object is bounded in all (65536 characters): 65536
# characters in 9 queries (none over its own 8192) are accepted, one more is
# refused; the guardrails' queries count too.
queries_patch() { # TOTAL_CHARACTERS : a patch with 9 metric queries summing to it
  python3 -c 'import json,sys
total = int(sys.argv[1]); ms = []
for i in range(9):
    n = total // 9 + (1 if i < total % 9 else 0)
    q = "sum(up{job=\"%s\"})" % ("j" * (n - 15))
    assert len(q) == n
    ms.append({"name": "m%d" % i, "type": "Prometheus", "prometheus": {"query": q},
               "target": {"type": "Value", "value": 1}})
print(json.dumps({"spec": {"metrics": ms, "guardrails": None}}))' "$1"
}
accept_patch() { # NAME PATCH : the valid object with PATCH is accepted
  local obj out
  obj="$(k create --dry-run=client -f "$here/valid-full.yaml" -o json 2>/dev/null |
    python3 -c 'import json,sys; o=json.load(sys.stdin); p=json.loads(sys.argv[1])
o["spec"].update({k: v for k, v in p["spec"].items() if v is not None})
[o["spec"].pop(k) for k, v in p["spec"].items() if v is None]
o["metadata"]["name"]="bound"; o["metadata"].pop("namespace",None); print(json.dumps(o))' "$2")"
  if out=$(printf '%s' "$obj" | k create --dry-run=server -n "$ns" -f - 2>&1); then pass "$1: accepted"
  else fail "$1: refused: $(cut -c1-300 <<<"$out")"; fi
}
accept_patch "query text of 65536 characters (9 queries)" "$(queries_patch 65536)"
# A shared budget (docs/decision-rules.md §2b) is a DNS-1123 label; the
# full example names one (budget: edge) and is accepted above.
budget_patch() { # NAME : the valid object's downstream naming budget NAME
  printf '{"spec":{"guardrails":{"downstream":[{"name":"edge-lb","usageQuery":"u","limit":100,"perReplica":4,"budget":"%s"}]}}}' "$1"
}
for bad in Edge edge_lb -edge edge- edge.lb ""; do
  refuse "budget \"$bad\"" "$(budget_patch "$bad")" "budget must be a DNS-1123 label"
done
refuse "budget of 64 characters" "$(budget_patch "$(printf 'a%.0s' {1..64})")" "spec.guardrails.downstream[0].budget: Too long"
accept_patch "budget of 63 characters" "$(budget_patch "$(printf 'a%.0s' {1..63})")"
refuse "query text of 65537 characters" "$(queries_patch 65537)" "may total at most 65536 characters"
refuse "query text over the bound through the guardrails" "$(python3 -c 'import json
q = "sum(up{job=\"%s\"})" % ("j" * 8177)
print(json.dumps({"spec": {"guardrails": {"downstream": [{"name": "d%d" % i, "usageQuery": q, "limitQuery": q, "perReplica": 1} for i in range(4)], "retryStorm": {"retryShareQuery": "x"}}}}))')" "may total at most 65536 characters"

# --- meshscaler convert: what it writes is what the API server takes
ms="$root/${MS_IT_BUILD:-build}/meshscaler"
fixtures="$root/tests/fixtures/convert"
for golden in "$fixtures"/*.golden.yaml; do
  name="$(basename "$golden" .golden.yaml)"
  # The goldens name namespaces of their own; dry-run them into this one.
  if out=$(sed -e "s/^  namespace: .*/  namespace: \"$ns\"/" "$golden" |
             k apply --dry-run=server -n "$ns" -f - 2>&1); then
    pass "convert $name: the API server accepts it ($(grep -c '^kind: MeshAutoscaler' "$golden") MeshAutoscaler)"
  else
    fail "convert $name: refused: $out"
  fi
done
# The HPA versions it still serves take the inputs the goldens came from.
for input in v1-defaults v2-resources-behavior list-two; do
  if out=$(sed -e "s/namespace: shop/namespace: $ns/" "$fixtures/$input.yaml" |
             k apply --dry-run=server -n "$ns" -f - 2>&1); then
    pass "convert input $input is a valid HPA"
  else
    fail "convert input $input refused: $out"
  fi
done
# A live HPA: the Deployment's pod template tells the proxy (--proxy auto).
if [[ -x "$ms" ]]; then
  k apply -n "$ns" -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers:
      - {name: app, image: app:local}
      - {name: istio-proxy, image: proxy:local}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shop}
  minReplicas: 2
  maxReplicas: 9
  metrics:
  - type: Resource
    resource: {name: cpu, target: {type: Utilization, averageUtilization: 55}}
EOF
  if out=$("$ms" convert --kubeconfig "$KUBECONFIG" -n "$ns" shop 2>&1) &&
     [[ "$out" == *"proxy: envoy"* && "$out" == *'container: "istio-proxy"'* &&
        "$out" == *"averageUtilization: 55"* && "$out" == *"minReplicas: 2"* ]]; then
    pass "convert of a live HPA finds Envoy in the Deployment's pod template"
  else
    fail "convert of a live HPA: $out"
  fi
  if out=$(printf '%s\n' "$out" | k apply -n "$ns" -f - 2>&1) &&
     [[ "$(k get mas shop -n "$ns" -o 'jsonpath={.spec.dryRun}')" == true ]]; then
    pass "the live conversion applies, in shadow mode (dryRun true)"
  else
    fail "the live conversion does not apply: $out"
  fi
  out=$("$ms" convert --kubeconfig "$KUBECONFIG" -n "$ns" nothere 2>&1); rc=$?
  if [[ $rc -eq 1 && "$out" == *"404"* ]]; then
    pass "convert of a missing HPA exits 1 with the API server's answer"
  else
    fail "convert of a missing HPA: exit $rc: $out"
  fi
else
  fail "convert: no meshscaler binary at $ms"
fi

k delete namespace "$ns" --wait=false >/dev/null 2>&1
echo "crd: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
