#!/usr/bin/env python3
"""report.py PARAMS.json: the figures, the checks and the chart of a lab run.

PARAMS (written by the scenario script) names the run's times, its settings, the
Prometheus to ask, each arm's load client (a file_sd target) and summary line, and
the timestamped watch logs (follow.py) of the Deployments, the HPA and the
controller. Time series come from the real Prometheus (query_range over the run,
1 s steps, of the load clients' own /metrics); replica counts from the watch of the
Deployments (spec.replicas and readyReplicas as the API server recorded them).

Writes OUT_DIR/summary.json, OUT_DIR/series.json and OUT_DIR/chart.svg, prints the
figures and one `ok`/`FAIL` line per check, then `N passed, N failed`; exits 1 on
a failed check.

  report.py PARAMS.json             the whole report
  report.py PARAMS.json --live S    every S seconds until the load ends, one line of
                                    offered, admitted and errors per second and the
                                    replicas of each arm (the terminal's progress)
"""
import json
import math
import os
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chart  # noqa: E402


def prom(url, path, **params):
    q = urllib.parse.urlencode(params)
    with urllib.request.urlopen("%s/api/v1/%s?%s" % (url, path, q), timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("prometheus: %s" % body)
    return body["data"]["result"]


def query_range(url, expr, start, end, step=1):
    """{labels-tuple: {t: value}} for a range query (t rounded to the step)."""
    out = {}
    for series in prom(url, "query_range", query=expr, start=start, end=end, step=step):
        key = tuple(sorted(series["metric"].items()))
        out[key] = {round(float(t)): float(v) for t, v in series["values"]}
    return out


def one_range(url, expr, start, end):
    res = query_range(url, expr, start, end)
    return next(iter(res.values())) if res else {}


def instant(url, expr, at):
    res = prom(url, "query", query=expr, time=at)
    if not res:
        return None
    v = float(res[0]["value"][1])
    return None if math.isnan(v) or math.isinf(v) else v


def read_stamped(path):
    """[(t, line)] from a follow.py log."""
    out = []
    try:
        with open(path) as f:
            for raw in f:
                t, _, line = raw.rstrip("\n").partition(" ")
                try:
                    out.append((float(t), line))
                except ValueError:
                    pass
    except FileNotFoundError:
        pass
    return out


def replicas_series(path, namespace):
    """[(t, spec, ready)] for the Deployment `web` of NAMESPACE, from the watch."""
    out = []
    for t, line in read_stamped(path):
        parts = line.split()
        if len(parts) < 3 or parts[0] != namespace or parts[1] != "web":
            continue
        spec = int(parts[2]) if parts[2].isdigit() else None
        ready = int(parts[3]) if len(parts) > 3 and parts[3].isdigit() else 0
        if spec is not None:
            out.append((t, spec, ready))
    return out


def hpa_cpu(path):
    """[(t, utilization%)] of the HPA's app CPU, from its watch."""
    out = []
    for t, line in read_stamped(path):
        parts = line.split("|")
        if len(parts) >= 2 and parts[1].strip().isdigit():
            out.append((t, int(parts[1])))
    return out


def value_at(steps, t):
    """The value of a step series [(t, v...)] at time t (None before the first)."""
    last = None
    for s in steps:
        if s[0] > t:
            break
        last = s
    return last


def arm_figures(p, arm, a, url):
    t0 = p["t0"]
    end = t0 + p["duration_s"] + 3
    sel = 'target="%s"' % a["target"]
    counters = {}
    for outcome in ("success", "failure"):
        counters[outcome] = one_range(url, 'meshscaler_load_requests_total{%s,outcome="%s"}' % (sel, outcome),
                                      t0 - 2, end)
    offered = one_range(url, "meshscaler_load_offered_rate{%s}" % sel, t0 - 2, end)
    attempts = one_range(url, "sum(meshscaler_load_attempts_total{%s})" % sel, t0 - 2, end)
    ts = list(range(int(math.floor(t0)), int(math.ceil(end)) + 1))

    def counter(name, t):
        c = counters[name]
        # the value at t, or the nearest earlier one (a missed scrape)
        for dt in range(0, 4):
            if t - dt in c:
                return c[t - dt]
        return None

    def delta(name, t1, t2):
        a1, a2 = counter(name, t1), counter(name, t2)
        if a1 is None or a2 is None:
            return None
        return max(0.0, a2 - a1)

    # Per-second rates for the chart: 5-s differences (scrapes are 1 s apart with
    # jitter), shorter at the very start of the run.
    first = min(counters["success"]) if counters["success"] else None
    series = []
    for t in ts:
        w = 5 if first is None else min(5, t - first)
        s = delta("success", t - w, t) if w >= 1 else None
        f = delta("failure", t - w, t) if w >= 1 else None
        series.append({
            "t": t - t0,
            "offered": offered.get(t),
            "admitted": None if s is None else s / w,
            "errors": None if f is None else f / w,
        })

    peak_start = t0 + p["base_s"]
    hold_start = peak_start + p["ramp_s"]
    hold_end = hold_start + p["hold_s"]
    lag = p["queue_timeout_s"]  # a refused request finishes this long after it arrived

    def share(t1, t2):
        s, f = delta("success", t1, t2), delta("failure", t1, t2)
        if s is None or f is None or s + f == 0:
            return None
        return f / (s + f)

    peak_share = share(int(hold_start + lag), int(hold_end + lag))

    # Recovery: from the peak's start, the first moment after which every 5-s window
    # up to the end of the hold has errors under 1%.
    win = 5
    last_bad_end = None
    for u in range(int(peak_start), int(hold_end) - win + 1):
        sh = share(u, u + win)
        if sh is None or sh >= 0.01:
            last_bad_end = u + win
    if last_bad_end is None:
        recover = 0.0
    elif last_bad_end >= int(hold_end):
        recover = None
    else:
        recover = round(last_bad_end - peak_start, 1)

    reps = replicas_series(p["replicas_log"], a["namespace"])
    run_reps = [r for r in reps if t0 - 1 <= r[0] <= t0 + p["duration_s"] + 5]
    before = value_at(reps, t0)
    start_count = before[1] if before else p["start_replicas"]
    first_scale = None
    for t, spec, _ in reps:
        if t >= t0 and spec > start_count:
            first_scale = round(t - peak_start, 1)
            break
    peak_reps = max([r[1] for r in run_reps] + [start_count])
    peak_ready = max([r[2] for r in run_reps] + [before[2] if before else 0])

    # The client's p99 covers the whole run. For the late peak (its second half, when
    # an autoscaler that acted has had time to), the client's Prometheus histogram
    # only has coarse buckets: report the smallest bucket bound holding 99%.
    half = int(p["hold_s"] / 2)
    late_p99 = None
    rows = prom(url, "query", query="sum by (le) (increase(meshscaler_load_request_duration_seconds_bucket{%s}[%ds]))"
                % (sel, half), time=hold_end + lag)
    buckets = sorted((float(r["metric"]["le"]), float(r["value"][1])) for r in rows)
    if buckets and buckets[-1][1] > 0:
        for le, n in buckets:
            if n >= 0.99 * buckets[-1][1]:
                late_p99 = le
                break
    summ = {}
    try:
        with open(a["summary"]) as f:
            summ = json.load(f)
    except (OSError, ValueError):
        pass
    att_end = attempts.get(max(attempts)) if attempts else None
    fig = {
        "namespace": a["namespace"],
        "autoscaler": a["autoscaler"],
        "errors_share_overall": summ.get("errors_share"),
        "errors_share_at_peak": None if peak_share is None else round(peak_share, 4),
        "p99_ms": summ.get("p99_ms"),
        "p50_ms": summ.get("p50_ms"),
        "p99_ms_late_peak_at_most": None if late_p99 is None else (None if math.isinf(late_p99) else late_p99 * 1000),
        "start_replicas": start_count,
        "peak_replicas": peak_reps,
        "peak_ready_replicas": peak_ready,
        "time_to_first_scale_s": first_scale,
        "time_to_recover_s": recover,
        "attempts_per_logical": summ.get("attempts_per_logical"),
        "logical_requests": summ.get("logical"),
        "successes": summ.get("successes"),
        "failures": summ.get("failures"),
        "achieved_rate": summ.get("achieved_rate"),
        "requested_rate": summ.get("requested_rate"),
        "max_start_lag_ms": summ.get("max_start_lag_ms"),
        "attempts_scraped": att_end,
        "scraped": bool(counters["success"]),
    }
    repl = [{"t": round(t - t0, 2), "replicas": spec, "ready": ready} for t, spec, ready in run_reps]
    if before:
        repl.insert(0, {"t": 0.0, "replicas": before[1], "ready": before[2]})
    return fig, series, repl


def edge_figures(p, a, url):
    """edge-flows: the balancer's flow-table occupancy (current / limit of the arm's
    frontend) per second and the bystander's figures, or ({}, []) in other scenarios."""
    if not p.get("lb_flows"):
        return {}, []
    t0 = p["t0"]
    end = t0 + p["duration_s"] + 3
    sel = 'proxy="%s"' % a["lb_proxy"]
    occ = one_range(url, "sum(haproxy_frontend_current_sessions{%s}) / sum(haproxy_frontend_limit_sessions{%s})"
                    % (sel, sel), t0 - 2, end)
    bsel = 'target="%s"' % a["bystander"]
    ok = one_range(url, 'rate(meshscaler_load_requests_total{%s,outcome="success"}[5s])' % bsel, t0 - 2, end)
    err = one_range(url, 'rate(meshscaler_load_requests_total{%s,outcome="failure"}[5s])' % bsel, t0 - 2, end)
    hold_start = t0 + p["base_s"] + p["ramp_s"]
    hold_end = hold_start + p["hold_s"]
    at_peak = [v for t, v in occ.items() if hold_start <= t <= hold_end]
    bys = {}
    try:
        with open(a["bystander_summary"]) as f:
            bys = json.load(f)
    except (OSError, ValueError):
        pass
    s_ok = sum(v for t, v in ok.items() if hold_start <= t <= hold_end)
    s_err = sum(v for t, v in err.items() if hold_start <= t <= hold_end)
    fig = {
        "edge_occupancy_peak": round(max(occ.values()), 4) if occ else None,
        "edge_occupancy_median_at_peak": round(sorted(at_peak)[len(at_peak) // 2], 4) if at_peak else None,
        "edge_flow_limit": p["lb_flows"],
        "bystander_errors_share_overall": bys.get("errors_share"),
        "bystander_errors_share_at_peak": round(s_err / (s_ok + s_err), 4) if s_ok + s_err > 0 else None,
        "bystander_p99_ms": bys.get("p99_ms"),
    }
    series = [{"t": t - t0, "occupancy": v} for t, v in sorted(occ.items())]
    return fig, series


def live(p, every):
    url = p["prometheus_url"]
    end = p["t0"] + p["duration_s"]
    while time.time() < end + 1:
        time.sleep(every)
        now = time.time()
        parts = ["t=%3ds" % (now - p["t0"])]
        for arm, a in p["arms"].items():
            sel = 'target="%s"' % a["target"]
            try:
                off = instant(url, "meshscaler_load_offered_rate{%s}" % sel, now)
                ok = instant(url, 'rate(meshscaler_load_requests_total{%s,outcome="success"}[5s])' % sel, now)
                err = instant(url, 'rate(meshscaler_load_requests_total{%s,outcome="failure"}[5s])' % sel, now)
            except Exception:  # noqa: BLE001 - a progress line is best effort
                off = ok = err = None
            edge = ""
            if p.get("lb_flows"):
                try:
                    occ = instant(url, 'sum(haproxy_frontend_current_sessions{proxy="%s"})' % a["lb_proxy"], now)
                except Exception:  # noqa: BLE001
                    occ = None
                edge = " flows %s/%d" % (fmt(occ, ""), p["lb_flows"])
            reps = replicas_series(p["replicas_log"], a["namespace"])
            r = reps[-1] if reps else None
            parts.append("%s: offered %s ok %s err %s replicas %s%s" % (
                a["label"], fmt(off), fmt(ok), fmt(err), "%d (%d ready)" % (r[1], r[2]) if r else "?", edge))
        print("[progress] " + " | ".join(parts), flush=True)


def fmt(v, unit="/s"):
    return "?" if v is None else "%.0f%s" % (v, unit)


def blind_vs_aware_checks(p, figures, needed, check, summary):
    h, m = figures["hpa"], figures["mesh"]
    check("hpa: errors at the peak %s >= 30%%" % pct(h["errors_share_at_peak"]),
          h["errors_share_at_peak"] is not None and h["errors_share_at_peak"] >= 0.30)
    check("hpa: does not scale enough (peak %d replicas < %d needed for the peak)" % (h["peak_replicas"], needed),
          h["peak_replicas"] < needed)
    bound = 2 * p["mesh_sync_s"]
    check("meshscaler: first scale %s s after the peak start, within two sync periods (%d s)"
          % (m["time_to_first_scale_s"], bound),
          m["time_to_first_scale_s"] is not None and 0 <= m["time_to_first_scale_s"] <= bound)
    check("meshscaler: errors < 1%% sustained %s s after the peak start (bound %d s)"
          % (m["time_to_recover_s"], p["recover_bound_s"]),
          m["time_to_recover_s"] is not None and m["time_to_recover_s"] <= p["recover_bound_s"])
    check("meshscaler: scaled enough (peak %d replicas >= %d)" % (m["peak_replicas"], needed),
          m["peak_replicas"] >= needed)
    # Shadow mode in the HPA arm: meshscaler in dry-run beside the HPA on its Deployment.
    try:
        cmp = json.load(open(p["shadow_json"]))["status"]["hpaComparison"]
    except (KeyError, OSError, ValueError, TypeError):
        cmp = {}
    summary["shadow_comparison"] = cmp
    check("shadow: meshscaler in dry-run beside the HPA asked more than it (max difference %s, "
          "%s of %s syncs differed)" % (cmp.get("maxDifference"), cmp.get("differingSyncs"), cmp.get("syncs")),
          (cmp.get("maxDifference") or 0) > 0)
    check("shadow: meshscaler raised its count first (meshscalerFirstUp %s, hpaFirstUp %s, leading %s)"
          % (cmp.get("meshscalerFirstUp"), cmp.get("hpaFirstUp"), cmp.get("leading")),
          (cmp.get("meshscalerFirstUp") or 0) >= 1 or cmp.get("leading") == "meshscaler")


def edge_flows_checks(p, figures, check):
    n, g = figures["noguard"], figures["guard"]
    limit = p["lb_max_utilization"]
    check("guard: the balancer held at or under %d%% of its flows (peak %s)"
          % (round(100 * limit), pct(g["edge_occupancy_peak"])),
          g["edge_occupancy_peak"] is not None and g["edge_occupancy_peak"] <= limit + 1e-9)
    check("no guard: the balancer's flow table saturated (peak %s >= 95%%)" % pct(n["edge_occupancy_peak"]),
          n["edge_occupancy_peak"] is not None and n["edge_occupancy_peak"] >= 0.95)
    check("guard: fewer peak replicas than without it (%d < %d)" % (g["peak_replicas"], n["peak_replicas"]),
          g["peak_replicas"] < n["peak_replicas"])
    check("guard: the bystander behind the same balancer served (errors at the peak %s < 1%%)"
          % pct(g["bystander_errors_share_at_peak"]),
          g["bystander_errors_share_at_peak"] is not None and g["bystander_errors_share_at_peak"] < 0.01)
    check("no guard: the bystander failed with the full table (errors at the peak %s > guard's %s)"
          % (pct(n["bystander_errors_share_at_peak"]), pct(g["bystander_errors_share_at_peak"])),
          n["bystander_errors_share_at_peak"] is not None and g["bystander_errors_share_at_peak"] is not None
          and n["bystander_errors_share_at_peak"] > g["bystander_errors_share_at_peak"])


def retry_storm_checks(p, figures, check):
    n, g = figures["noguard"], figures["guard"]
    check("guard: attempts per logical request %s < 1.5" % num(g["attempts_per_logical"]),
          g["attempts_per_logical"] is not None and g["attempts_per_logical"] < 1.5)
    check("guard: fewer peak replicas than without it (%d < %d)" % (g["peak_replicas"], n["peak_replicas"]),
          g["peak_replicas"] < n["peak_replicas"])
    check("guard: errors < 1%% sustained %s s after the peak start (bound %d s)"
          % (g["time_to_recover_s"], p["recover_bound_s"]),
          g["time_to_recover_s"] is not None and g["time_to_recover_s"] <= p["recover_bound_s"])


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        p = json.load(f)
    if len(sys.argv) > 3 and sys.argv[2] == "--live":
        live(p, float(sys.argv[3]))
        return 0
    url = p["prometheus_url"]
    out = p["out_dir"]
    os.makedirs(out, exist_ok=True)
    scenario = p["scenario"]
    arms = list(p["arms"])
    figures, series, replicas = {}, {}, {}
    occupancy = {}
    for arm, a in p["arms"].items():
        figures[arm], series[arm], replicas[arm] = arm_figures(p, arm, a, url)
        edge, occupancy[arm] = edge_figures(p, a, url)
        figures[arm].update(edge)

    # The HPA's readings of the app's CPU while the peak holds, from 30 s into it (one
    # metrics-server window and one HPA sync after the load changed).
    if "hpa" in figures and p.get("hpa_log"):
        cpu = hpa_cpu(p["hpa_log"])
        hold_start = p["t0"] + p["base_s"] + p["ramp_s"]
        hold = sorted(v for t, v in cpu if hold_start + 30 <= t <= hold_start + p["hold_s"])
        figures["hpa"]["app_cpu_utilization_at_peak_pct"] = {
            "readings": len(hold), "min": hold[0], "median": hold[len(hold) // 2], "max": hold[-1]} if hold else None
        figures["hpa"]["app_cpu_target_pct"] = p["target_utilization"]

    decisions = [line for _, line in read_stamped(p["decisions_log"])]
    for arm, a in p["arms"].items():
        if not a.get("meshscaler"):
            continue
        scaled = []
        for line in decisions:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            # The controller names an object "namespace/name".
            if rec.get("msg") == "scaled" and rec.get("object", "").split("/")[0] == a["namespace"]:
                scaled.append({"time": rec.get("ts"), "from": rec.get("from"), "to": rec.get("to"),
                               "reason": rec.get("reason")})
        # Attach each scale's explanation from its SuccessfulRescale event ("New size: N;
        # reason: ..."), in order of time.
        try:
            with open(a["events_json"]) as f:
                items = json.load(f).get("items", [])
            items.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
            messages = [e.get("message", "") for e in items]
            for ev, msg in zip(scaled, messages):
                ev["message"] = msg
        except (OSError, ValueError, KeyError):
            pass
        figures[arm]["scale_events"] = scaled

    needed = math.ceil(p["peak_rate"] / p["pod_admits_per_s"])
    summary = {
        "scenario": scenario,
        "mode": p["mode"],
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(p["t0"])),
        "arms_run": "side by side, two namespaces, one load client each (same profile and seed)",
        "load": {
            "profile": p["profile"], "retry": p["retry"], "base_rate": p["base_rate"],
            "peak_rate": p["peak_rate"], "peak_start_s": p["base_s"], "ramp_s": p["ramp_s"],
            "hold_s": p["hold_s"], "duration_s": p["duration_s"],
            "url": "http://<Service ClusterIP>/work from the host, through kube-proxy",
        },
        "workload": {
            "start_replicas": p["start_replicas"], "max_replicas": p["max_replicas"],
            "sidecar_maxconn": p["sidecar_maxconn"], "queue_timeout_s": p["queue_timeout_s"],
            "app_hold_ms": p["hold_ms"], "app_cpu_us": p["cpu_us"], "app_workers": p["app_workers"],
            "app_cpu_request": p["app_cpu_request"], "startup_delay_s": p["startup_delay_s"],
            "pod_admits_per_s": p["pod_admits_per_s"],
            "replicas_needed_at_peak_at_100pct": needed,
        },
        "balancer": None if not p.get("lb_flows") else {
            "flow_limit_per_arm": p["lb_flows"], "pooled_connections_per_pod": p["pool_conns"],
            "guard_max_utilization": p["lb_max_utilization"], "bystander_rate": p["bystander_rate"],
            "what": "each pod keeps its pool through the balancer and needs it to serve; a bystander's "
                    "requests, a new flow each, share the table"},
        "autoscalers": dict({arm: p["arms"][arm]["autoscaler"] for arm in arms}, behavior=(
            "both: scale up without stabilization, max(400%, 4 pods) per 15 s; scale down HPA's default")),
        "timings_s": p.get("timings", {}),
        "arms": figures,
    }

    checks = []

    def check(name, cond):
        checks.append({"check": name, "ok": bool(cond)})

    for arm, f in figures.items():
        check("%s: Prometheus scraped the load client" % arm, f["scraped"])
        req, ach = f.get("requested_rate"), f.get("achieved_rate")
        check("%s: the client offered the profile (achieved %s/s of %s/s, within 3%%)" % (arm, ach, req),
              req and ach and abs(ach - req) <= 0.03 * req)
    if scenario == "blind-vs-aware":
        blind_vs_aware_checks(p, figures, needed, check, summary)
    elif scenario == "retry-storm":
        retry_storm_checks(p, figures, check)
    else:
        edge_flows_checks(p, figures, check)
    summary["checks"] = checks
    summary["recover_bound_s"] = p["recover_bound_s"]
    # The run's settings (the chart is redrawn from them), without this machine's paths.
    summary["params"] = {k: v for k, v in p.items()
                         if not k.endswith("_log") and not k.endswith("_json") and k not in ("out_dir", "arms", "prometheus_url", "timings")}

    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "series.json"), "w") as f:
        json.dump({"peak_start_s": p["base_s"], "hold_start_s": p["base_s"] + p["ramp_s"],
                   "hold_end_s": p["base_s"] + p["ramp_s"] + p["hold_s"], "duration_s": p["duration_s"],
                   "rates": series, "replicas": replicas, "occupancy": occupancy}, f)
    chart.write_svg(os.path.join(out, "chart.svg"), summary, series, replicas, p, occupancy)

    print()
    print("%-34s %22s %22s" % ("", p["arm_labels"][arms[0]], p["arm_labels"][arms[1]]))
    rows = [
        ("errors, whole run", "errors_share_overall", pct),
        ("errors at the peak (hold)", "errors_share_at_peak", pct),
        ("p99 latency, whole run (ms)", "p99_ms", num),
        ("p99, 2nd half of the peak (ms) <=", "p99_ms_late_peak_at_most", num),
        ("peak replicas (ready)", None, None),
        ("first scale after peak start (s)", "time_to_first_scale_s", num),
        ("errors < 1% sustained after (s)", "time_to_recover_s", num),
        ("attempts per logical request", "attempts_per_logical", num),
    ]
    if p.get("lb_flows"):
        rows += [("balancer flows, peak occupancy", "edge_occupancy_peak", pct),
                 ("bystander errors at the peak", "bystander_errors_share_at_peak", pct)]
    for label, key, f in rows:
        if key is None:
            vals = ["%d (%d)" % (figures[a]["peak_replicas"], figures[a]["peak_ready_replicas"]) for a in arms]
        else:
            vals = [f(figures[a][key]) for a in arms]
        print("%-34s %22s %22s" % (label, vals[0], vals[1]))
    if figures.get("hpa", {}).get("app_cpu_utilization_at_peak_pct"):
        c = figures["hpa"]["app_cpu_utilization_at_peak_pct"]
        print("the HPA read the app's CPU at %d-%d%% of its request during the peak (median %d%%, target %d%%)"
              % (c["min"], c["max"], c["median"], p["target_utilization"]))
    print()
    failed = 0
    for c in checks:
        print("%s %s" % ("ok  " if c["ok"] else "FAIL", c["check"]))
        failed += 0 if c["ok"] else 1
    print("%d passed, %d failed" % (len(checks) - failed, failed))
    return 1 if failed else 0


def pct(v):
    return "n/a" if v is None else "%.1f%%" % (100 * v)


def num(v):
    if v is None:
        return "never"
    return "%g" % round(v, 2)


if __name__ == "__main__":
    sys.exit(main())
