# t_biglist.sh - issue 23 item 2: MeshAutoscalers as large as the CRD lets
# them be. 150 objects of about 315 KB each (a 250 KB annotation, the CRD's
# 65536 characters of query text) are 47 MB in all: more than a page of the
# list may carry (16 MiB, MS_KUBE_LIST_PAGE_MAX), so the list asks again for
# fewer objects per page. A leader-electing controller syncs, takes the Lease
# only after its caches synced, and decides for every object; its peak RSS
# stays under the chart's 256 Mi limit (printed). An object over the CRD's
# bound on query text (65 queries of 8192 characters) is refused at
# admission with the CRD's message. Prometheus answers 8 distinct long queries
# a round (the padding queries read the same in every object of the namespace
# and are deduplicated), plus each object's own load query.
# Two controllers, one after the other: a live one with --leader-elect (the
# Lease only after the caches synced; it scales big000), then a dry-run one
# that must decide for all 150 objects (a line each) and whose peak RSS is the
# figure. The live one is not waited on for 150 status patches: each returns
# the 315 KB object, and on a loaded machine the API server then falls behind
# the Lease's renewals (seen: 30 of 150 in 240 s at a load average of 50).

BL_OBJECTS=${BL_OBJECTS:-150}
BL_RSS_BOUND=256 # MiB: the chart's resources.limits.memory
BL_PAD=7990      # characters of padding per long query (8 of them: 63920 + the rest)

# bl_objects NS COUNT MODE : JSON of a List of COUNT Deployments (MODE
# deployments) or MeshAutoscalers (MODE mas), or one MeshAutoscaler over the
# CRD's query bound (MODE over).
bl_objects() {
  python3 - "$1" "$2" "$3" "$BL_PAD" <<'PY'
import json, sys
ns, count, mode, pad = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])

def long_query(i, n):
    # Matches nothing (no such workload), so "or vector(0)" answers 0; the
    # namespace matcher keeps it legal under --user-queries=namespaced.
    return ('sum(test_load{namespace="{{namespace}}",workload="pad%d-%s"}) or vector(0)'
            % (i, "z" * n))

def mas(name, over):
    n = 8192 if over else pad
    # Sized to n characters each.
    q = [long_query(i, 0) for i in range(40)]
    q = [long_query(i, n - len(q[i])) for i in range(40)]
    metrics = [{"name": "load", "type": "Prometheus",
                "prometheus": {"query": 'sum(test_load{namespace="{{namespace}}",workload="{{name}}"})'},
                "target": {"type": "AverageValue", "averageValue": "10"}}]
    nmetrics = 16 if over else 6
    for i in range(1, nmetrics):
        metrics.append({"name": "pad%d" % i, "type": "Prometheus", "prometheus": {"query": q[i]},
                        "target": {"type": "AverageValue", "averageValue": "10"}})
    guard = {"retryStorm": {"retryShareQuery": q[20]},
             "saturation": [{"metric": "load", "rejectedQuery": q[21], "admittedQuery": q[22]}]}
    if over:
        guard["saturation"] = [{"metric": m["name"], "rejectedQuery": q[23], "admittedQuery": q[24]}
                               for m in metrics]
        guard["downstream"] = [{"name": "d%d" % i, "usageQuery": q[25], "limitQuery": q[26],
                                "perReplica": 10} for i in range(8)]
    return {"apiVersion": "autoscaling.meshscaler.io/v1alpha1", "kind": "MeshAutoscaler",
            "metadata": {"name": name, "annotations": {"example.com/blob": "b" * 250000}},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
                     "maxReplicas": 10, "metrics": metrics, "guardrails": guard}}

def deployment(name):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"schedulerName": "meshscaler-e2e-unscheduled",
                                           "containers": [{"name": "app", "image": "registry.invalid/mse2e:1"}]}}}}

if mode == "over":
    print(json.dumps(mas("over", True)))
else:
    make = mas if mode == "mas" else deployment
    items = [make("big%03d" % i, False) if mode == "mas" else make("big%03d" % i) for i in range(count)]
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
}

# bl_decided OUT : how many objects have a decision line in a dry-run
# controller's JSON output.
bl_decided() {
  python3 - "$1" <<'PY' 2>/dev/null
import json, sys
names = set()
for line in open(sys.argv[1]):
    try:
        o = json.loads(line)
    except ValueError:
        continue
    if o.get("name") and o.get("desiredReplicas") is not None and o.get("reason"):
        names.add(o["name"])
print(len(names))
PY
}
bl_all_decided() { [[ "$(bl_decided "$1")" -ge "$2" ]]; }

# bl_rss PID : "HWM RSS" in MiB from /proc/PID/status.
bl_rss() { awk '/^VmHWM:/ {h = $2} /^VmRSS:/ {r = $2} END {printf "%d %d\n", h / 1024, r / 1024}' "/proc/$1/status" 2>/dev/null; }

test_biglist() {
  new_ns biglist || { fail "biglist: namespace"; return; }
  local ns="$NS" id="mse2e-biglist-$$" out size
  # --- admission: over the bound, refused with the CRD's message
  bl_objects "$ns" 1 over >"$WORK/bl-over.json"
  size=$(stat -c %s "$WORK/bl-over.json")
  if out="$(k create -n "$ns" -f "$WORK/bl-over.json" 2>&1)"; then
    fail "biglist: an object of $size bytes with 65 queries of 8192 characters is accepted"
  elif [[ "$out" == *"may total at most 65536 characters"* ]]; then
    ok "biglist: an object of $size bytes with 65 queries of 8192 characters is refused: \"$(grep -o 'the queries of one[^"]*characters' <<<"$out" | head -n 1)\""
  else
    fail "biglist: the over-bound object is refused, but not for its queries: $(cut -c1-300 <<<"$out")"
  fi
  # --- the big list
  bl_objects "$ns" "$BL_OBJECTS" deployments >"$WORK/bl-deploy.json"
  k create -n "$ns" -f "$WORK/bl-deploy.json" >/dev/null || { fail "biglist: Deployments"; return; }
  bl_objects "$ns" "$BL_OBJECTS" mas >"$WORK/bl-mas.json"
  if out="$(k create -n "$ns" -f "$WORK/bl-mas.json" 2>&1 >/dev/null)"; then
    ok "biglist: $BL_OBJECTS MeshAutoscalers of $(( $(stat -c %s "$WORK/bl-mas.json") / BL_OBJECTS / 1000 )) KB each (query text at the CRD's bound) are accepted"
  else
    fail "biglist: the MeshAutoscalers within the bound are refused: $(head -c 300 <<<"$out")"; return
  fi
  set_and_wait test_load "$ns" big000 35 ||
    { fail "biglist: Prometheus never answered the load"; return; }
  lease_role "$ns" "$id"
  local t0=$SECONDS
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=8" ctl_start bl "$RESTRICTED" --namespace "$ns" \
    --leader-elect --leader-election-id "$id" --leader-election-namespace "$ns" --sync-period 10s ||
    { fail "biglist: the controller never got ready (caches never synced)"; return; }
  ok "biglist: the controller's caches synced in $((SECONDS - t0)) s (/readyz 200)"
  local pid="${CTL_PID[bl]}" err="${CTL_ERR[bl]}" pages
  pages=$(grep -c 'list page over its size limit' "$err")
  if [[ "$pages" -ge 1 ]] && ! grep -q 'list failed' "$err"; then
    ok "biglist: pages over 16 MiB were asked again for fewer objects ($pages times: $(grep -m1 -o '"limit":[0-9]*' "$err")), no list failed"
  else
    fail "biglist: want the list to shrink its pages and never fail: $pages shrinks, $(grep -c 'list failed' "$err") failures ($(grep -m1 'list failed' "$err" | cut -c1-200))"
  fi
  local synced_at lease_at
  synced_at=$(grep -n '"caches synced"' "$err" | head -n 1 | cut -d: -f1)
  lease_at=$(grep -n '"leader election started"' "$err" | head -n 1 | cut -d: -f1)
  if [[ -n "$synced_at" && -n "$lease_at" && "$lease_at" -gt "$synced_at" ]]; then
    ok "biglist: leader election started after the caches synced (log lines $synced_at, $lease_at)"
  else
    fail "biglist: leader election must start after the caches synced: caches synced at line ${synced_at:-none}, election at ${lease_at:-none}"
  fi
  if wait_for 60 is_replicas "$ns" big000 4; then ok "biglist: the leader scaled big000 to 4 on its load of 35"
  else fail "biglist: big000 at $(replicas "$ns" big000) replicas, want 4 (reason $(mas_reason "$ns" big000))"; fi
  local hwm rss
  read -r hwm rss <<<"$(bl_rss "$pid")"
  echo "# biglist: live controller, $BL_OBJECTS objects of ~315 KB: VmHWM $hwm MiB, VmRSS $rss MiB ($(basename "$(dirname "$MS")") build)"
  ctl_stop bl
  # --- every object decided, and the peak RSS of a controller over them all
  t0=$SECONDS
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:quarantine_size_mb=8" ctl_start bldry "$RESTRICTED" --namespace "$ns" \
    --dry-run --output json --sync-period 10s ||
    { fail "biglist: the dry-run controller never got ready"; return; }
  pid="${CTL_PID[bldry]}"
  if wait_for 120 bl_all_decided "${CTL_OUT[bldry]}" "$BL_OBJECTS"; then
    ok "biglist: every one of the $BL_OBJECTS objects has a decision ($((SECONDS - t0)) s after the start)"
  else
    fail "biglist: $(bl_decided "${CTL_OUT[bldry]}") of $BL_OBJECTS objects have a decision after 120 s"
  fi
  read -r hwm rss <<<"$(bl_rss "$pid")"
  echo "# biglist: $BL_OBJECTS objects of ~315 KB, all decided: controller VmHWM $hwm MiB, VmRSS $rss MiB ($(basename "$(dirname "$MS")") build)"
  if [[ -n "$hwm" && "$hwm" -lt "$BL_RSS_BOUND" ]]; then
    ok "biglist: peak RSS $hwm MiB, under the chart's limit of $BL_RSS_BOUND Mi"
  else
    fail "biglist: peak RSS ${hwm:-?} MiB, not under the chart's limit of $BL_RSS_BOUND Mi"
  fi
  ctl_stop bldry
  series_set test_load "$ns" big000 0
  publish
  k delete namespace "$ns" --wait=false >/dev/null 2>&1
}
