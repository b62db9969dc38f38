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
  report.py PARAMS.json --replay    the whole report again, offline, from the
                                    Prometheus answers the last report kept in
                                    logs/prometheus.json (no cluster needed)
"""
import atexit
import json
import math
import os
import re
import sys
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import chart  # noqa: E402


# Every answer of a report, by query: kept in logs/prometheus.json so that
# `--replay` redoes the report without the cluster.
ANSWERS = {}
REPLAY = False


def prom(url, path, **params):
    q = urllib.parse.urlencode(sorted(params.items()))
    key = "%s?%s" % (path, q)
    if REPLAY:
        if key not in ANSWERS:
            raise RuntimeError("--replay: no kept answer for %s (a query the last report did not make)" % key)
        return ANSWERS[key]
    with urllib.request.urlopen("%s/api/v1/%s" % (url, key), timeout=30) as r:
        body = json.load(r)
    if body.get("status") != "success":
        raise RuntimeError("prometheus: %s" % body)
    ANSWERS[key] = body["data"]["result"]
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
    # What the client sent (arrivals started or dropped), not what its profile asked.
    counters["arrival"] = one_range(url, "meshscaler_load_arrivals_total{%s}" % sel, t0 - 2, end)
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
        o = delta("arrival", t - w, t) if w >= 1 else None
        series.append({
            "t": t - t0,
            "offered": None if o is None else o / w,
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
    # The sidecars' own in-flight count over the late peak (the hold's second half, once
    # an autoscaler has had time to act): by Little's law, the peak's rate times the time
    # a request takes on these pods, whatever slowed them (the overshoot bound's base on
    # a machine slower than the nominal 50/s a pod).
    inflight = one_range(url, 'sum(haproxy_server_current_sessions{namespace="%s",pod!=""})' % a["namespace"],
                         hold_end - half, hold_end)
    late_inflight = sum(inflight.values()) / len(inflight) if inflight else None
    late_inflight_max = max(inflight.values()) if inflight else None
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
        "in_flight_late_peak": None if late_inflight is None else round(late_inflight, 1),
        "in_flight_late_peak_max": None if late_inflight_max is None else round(late_inflight_max, 1),
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
        "drops": summ.get("drops"),
        "abandoned": summ.get("abandoned"),
        "client_summary": bool(summ),
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


def decisions_of(p, namespace):
    """[{t, current, desired, recommendation, discounted, storm}] of the controller's
    decisions ("decided" and "scaled" log lines) for NAMESPACE's MeshAutoscaler, in
    order, t the wall time follow.py stamped."""
    out = []
    for t, line in read_stamped(p["decisions_log"]):
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if rec.get("msg") not in ("decided", "scaled") or str(rec.get("object", "")).split("/")[0] != namespace:
            continue
        msg = str(rec.get("message", ""))
        m = re.search(r"recommendation (\d+)", msg)
        scaled = rec.get("msg") == "scaled"
        out.append({"t": t, "current": rec.get("from" if scaled else "current"),
                    "desired": rec.get("to" if scaled else "desired"),
                    "recommendation": int(m.group(1)) if m else None,
                    "discounted": "retries discounted" in msg, "storm": "retry storm" in msg,
                    "reason": rec.get("reason"), "budget": "budget edge" in msg,
                    "reserved": "starting replicas reserve" in msg})
    return out


def retry_figures(p, arm, a, url):
    """retry-storm: the retry share as the arm's proxy counted it (the edge HAProxy's
    requests marked x-retry-attempt over all its requests, the query the guard reads),
    as the client counted it, and the arm's decisions against that share."""
    q = (p.get("retry_share_queries") or {}).get(arm)
    if not q:
        return {}, []
    t0 = p["t0"]
    hold_start = t0 + p["base_s"] + p["ramp_s"]
    hold_end = hold_start + p["hold_s"]
    share = one_range(url, q, t0 - 2, t0 + p["duration_s"] + 3)
    at_peak = [v for t, v in share.items() if hold_start <= t <= hold_end and not math.isnan(v)]
    sel = 'target="%s"' % a["target"]
    client = instant(url, "1 - sum(increase(meshscaler_load_requests_total{%s}[%ds])) / "
                     "sum(increase(meshscaler_load_attempts_total{%s}[%ds]))"
                     % (sel, p["hold_s"], sel, p["hold_s"]), hold_end + p["queue_timeout_s"])
    proxy = instant(url, q.replace("[%s]" % p["rate_window"], "[%ds]" % p["hold_s"]),
                    hold_end + p["queue_timeout_s"])

    def share_low(t):
        """The lowest share over the 3 s before a decision (the controller read its
        share at some moment in there): a decision counts as in the storm only when
        every reading around it was above the threshold."""
        vals = [share.get(int(t) - dt) for dt in range(0, 4)]
        vals = [v for v in vals if v is not None and not math.isnan(v)]
        return min(vals) if vals else 0

    threshold = p["retry_threshold"]
    ticks = [d for d in decisions_of(p, a["namespace"]) if t0 <= d["t"] <= t0 + p["duration_s"]]
    storm = [d for d in ticks if share_low(d["t"]) > threshold]
    below = [d for d in storm if d["recommendation"] is not None and d["current"] is not None
             and d["recommendation"] < d["current"]]
    return {
        "retry_share_query": q,
        "proxy_retry_share_max_at_peak": round(max(at_peak), 4) if at_peak else None,
        "proxy_retry_share_over_hold": None if proxy is None else round(proxy, 4),
        "client_retry_share_over_hold": None if client is None else round(client, 4),
        "decisions": len(ticks),
        "decisions_retries_discounted": sum(1 for d in ticks if d["discounted"]),
        "decisions_while_share_above_threshold": len(storm),
        "decisions_below_current_while_share_above_threshold": len(below),
        "below_current_examples": [{"t": round(d["t"] - t0, 1), "current": d["current"],
                                    "recommendation": d["recommendation"]} for d in below[:5]],
    }, [{"t": t - t0, "share": v} for t, v in sorted(share.items()) if not math.isnan(v)]


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
                off = instant(url, "rate(meshscaler_load_arrivals_total{%s}[5s])" % sel, now)
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


def needed_measured(p, f, key="in_flight_late_peak"):
    """The replicas that hold the sidecars' measured in-flight count (f[key]) at the
    target, or None."""
    v = f.get(key)
    if v is None:
        return None
    return math.ceil(v / (p["sidecar_maxconn"] * p["target_utilization"] / 100) - 1e-9)


def overshoot_bound(p, f):
    """What the peak needs at the target — at the nominal pod speed, or at the speed the
    sidecars measured if the pods were slower (a starved machine) — plus OVERSHOOT_SLACK;
    or, if larger, what the highest count the sidecars showed in the late peak asks with
    no slack: an autoscaler without scale-up stabilization follows one reading."""
    measured = needed_measured(p, f)
    highest = needed_measured(p, f, "in_flight_late_peak_max")
    return max(p["needed_at_target"] + OVERSHOOT_SLACK, (measured or 0) + OVERSHOOT_SLACK, highest or 0)


def overshoot_check(p, arm, f, check):
    """meshscaler's peak at most OVERSHOOT_SLACK above what the peak needs at the target."""
    bound = overshoot_bound(p, f)
    highest = f.get("in_flight_late_peak_max")
    check("%s: no overshoot (peak %d replicas <= %d: the peak needs %d at %d%% (%s at the %s in flight the "
          "sidecars measured), + %d%s)"
          % (arm, f["peak_replicas"], bound, p["needed_at_target"], p["target_utilization"],
             num(needed_measured(p, f)), num(f.get("in_flight_late_peak")), OVERSHOOT_SLACK,
             "" if highest is None else "; their highest reading, %s, asks %s"
             % (num(highest), num(needed_measured(p, f, "in_flight_late_peak_max")))),
          f["peak_replicas"] <= bound)


def recovered_check(arm, f, p, check):
    """A direction with a wide bound: errors under 1% for good before the hold ends
    (the time is a figure, printed and kept in summary.json)."""
    t = f["time_to_recover_s"]
    check("%s: errors < 1%% sustained before the peak ended (%s; the time is a figure)"
          % (arm, "never" if t is None else "after %g s" % t), t is not None)


def blind_vs_aware_checks(p, figures, needed, check, summary):
    h, m = figures["hpa"], figures["mesh"]
    check("hpa: errors at the peak %s >= 30%%" % pct(h["errors_share_at_peak"]),
          h["errors_share_at_peak"] is not None and h["errors_share_at_peak"] >= 0.30)
    check("hpa: never scaled (peak %d replicas = the %d it started with)" % (h["peak_replicas"], h["start_replicas"]),
          h["peak_replicas"] == h["start_replicas"])
    # Times are figures: the checks assert the direction (meshscaler scaled during the
    # peak, the HPA did not), not a bound a slow machine could miss.
    check("meshscaler: scaled up during the peak (first scale %s s after its start; HPA: %s)"
          % (m["time_to_first_scale_s"], num(h["time_to_first_scale_s"])),
          m["time_to_first_scale_s"] is not None and 0 <= m["time_to_first_scale_s"] <= p["hold_s"]
          and h["time_to_first_scale_s"] is None)
    recovered_check("meshscaler", m, p, check)
    check("meshscaler: scaled enough (peak %d replicas >= %d)" % (m["peak_replicas"], needed),
          m["peak_replicas"] >= needed)
    overshoot_check(p, "meshscaler", m, check)
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


# The bystander's errors at the peak that tell the arms apart: measured 73-94% with a
# full table, 0.0% with the guard (e2e/lab/README.md).
BYSTANDER_FAILS = 0.25


def edge_flows_checks(p, figures, check):
    if p.get("variant") == "slow-start":
        return slow_start_checks(p, figures, check)
    n, g = figures["noguard"], figures["guard"]
    limit = p["lb_max_utilization"]
    check("guard: the balancer held at or under %d%% of its flows (peak %s)"
          % (round(100 * limit), pct(g["edge_occupancy_peak"])),
          g["edge_occupancy_peak"] is not None and g["edge_occupancy_peak"] <= limit + 1e-9)
    check("no guard: the balancer's flow table saturated (peak %s >= 95%%)" % pct(n["edge_occupancy_peak"]),
          n["edge_occupancy_peak"] is not None and n["edge_occupancy_peak"] >= 0.95)
    check("guard: fewer peak replicas than without it (%d < %d)" % (g["peak_replicas"], n["peak_replicas"]),
          g["peak_replicas"] < n["peak_replicas"])
    overshoot_check(p, "guard", g, check)
    check("guard: the bystander behind the same balancer served (errors at the peak %s < 1%%)"
          % pct(g["bystander_errors_share_at_peak"]),
          g["bystander_errors_share_at_peak"] is not None and g["bystander_errors_share_at_peak"] < 0.01)
    check("no guard: the bystander failed with the full table (errors at the peak %s >= %d%%; guard: %s)"
          % (pct(n["bystander_errors_share_at_peak"]), round(100 * BYSTANDER_FAILS),
             pct(g["bystander_errors_share_at_peak"])),
          n["bystander_errors_share_at_peak"] is not None and n["bystander_errors_share_at_peak"] >= BYSTANDER_FAILS)


def slow_start_checks(p, figures, check):
    """edge-flows, slow-start: both arms guarded, new pods 20 s in an init container;
    (a) without the starting-pod reservation (the per-object opt-out), (b) with it."""
    n, r = figures["noreserve"], figures["reserve"]
    limit = p["lb_max_utilization"]
    # The pools the arm's peak count would hold once its pods run: the guard's own
    # arithmetic (perReplica x replicas), not the table's momentary count, which the
    # pods still starting do not show yet and a full table caps.
    def pools(f):
        return f["peak_replicas"] * p["pool_conns"]
    reserved = [d for d in decisions_of(p, p["arms"]["reserve"]["namespace"]) if d["reserved"]]
    unreserved = [d for d in decisions_of(p, p["arms"]["noreserve"]["namespace"]) if d["reserved"]]
    check("no reservation: the guard granted the same room again while pods started (peak replicas %d, "
          "%d flows of %d: past %d%%; the table peaked at %s, the bystander's errors at the peak %s)"
          % (n["peak_replicas"], pools(n), p["lb_flows"], round(100 * limit), pct(n["edge_occupancy_peak"]),
             pct(n["bystander_errors_share_at_peak"])),
          pools(n) > limit * p["lb_flows"] + 1e-9)
    check("no reservation: no decision reserved for starting pods (%d say \"starting replicas reserve\")"
          % len(unreserved), not unreserved)
    check("reservation: decisions reserved room for starting pods (%d say \"starting replicas reserve\")"
          % len(reserved), reserved)
    check("reservation: its pools held at or under %d%% of the table (peak replicas %d, %d flows of %d)"
          % (round(100 * limit), r["peak_replicas"], pools(r), p["lb_flows"]),
          pools(r) <= limit * p["lb_flows"] + 1e-9)
    check("reservation: the balancer held at or under %d%% of its flows (peak %s)"
          % (round(100 * limit), pct(r["edge_occupancy_peak"])),
          r["edge_occupancy_peak"] is not None and r["edge_occupancy_peak"] <= limit + 1e-9)
    check("reservation: the bystander behind its balancer served (errors at the peak %s < 1%%)"
          % pct(r["bystander_errors_share_at_peak"]),
          r["bystander_errors_share_at_peak"] is not None and r["bystander_errors_share_at_peak"] < 0.01)
    check("reservation: fewer peak replicas than without it (%d < %d)" % (r["peak_replicas"], n["peak_replicas"]),
          r["peak_replicas"] < n["peak_replicas"])
    check("reservation: it still scaled out (peak replicas %d > %d at the start)"
          % (r["peak_replicas"], p["start_replicas"]), r["peak_replicas"] > p["start_replicas"])


def shared_edge_checks(p, figures, check):
    """shared-edge: two services behind one balancer (both arms read the same table and
    bystander). own: each guard sees all of the room; budget: they split it."""
    s, c = figures["shop"], figures["cart"]
    limit = p["lb_max_utilization"]
    occ, bys = s["edge_occupancy_peak"], s["bystander_errors_share_at_peak"]
    # Decisions the budget bound say "budget edge: N of M replicas asked, room R flows
    # shared by 2 objects" with the reason DownstreamLimit (the controller's decided
    # and scaled lines, both services).
    decisions = [d for arm in ("shop", "cart") for d in decisions_of(p, p["arms"][arm]["namespace"])]
    split = [d for d in decisions if d["budget"]]
    if p.get("variant") == "own":
        check("own guards: no decision names a budget (%d of %d do)" % (len(split), len(decisions)),
              decisions and not split)
        # Past the guardrail, not necessarily full: how far depends on whether the
        # two first decisions already asked for all the room (then 10+ pods, a full
        # table and the bystander failing) or came a step at a time (8 pods, 80%).
        # The table's peak and the bystander's errors are figures here.
        pools = (s["peak_replicas"] + c["peak_replicas"]) * p["pool_conns"]
        check("own guards: together the two services' pools went past %d%% of the table (peak replicas %d + "
              "%d, %d flows of %d; the table peaked at %s, the bystander's errors at the peak %s)"
              % (round(100 * limit), s["peak_replicas"], c["peak_replicas"], pools, p["lb_flows"], pct(occ),
                 pct(bys)), pools > limit * p["lb_flows"] + 1e-9)
    else:
        bound = [d for d in split if d["reason"] == "DownstreamLimit"]
        check("budget: the split bound scale-outs (%d of %d decisions limited by \"budget edge\")"
              % (len(bound), len(decisions)), bound)
        # The services' pools, not the table's momentary count: the bystander's own
        # connections come and go on top (a run here peaked at 176 of 250 flows, 70.4%,
        # with 7 pods' 175 and one bystander request in flight). Each service's peak
        # replicas added is an upper bound on their largest sum at one time.
        pools = (s["peak_replicas"] + c["peak_replicas"]) * p["pool_conns"]
        check("budget: the two services' pools held at or under %d%% of the table (peak replicas %d + %d, "
              "%d flows of %d; the table with the bystander's flows peaked at %s)"
              % (round(100 * limit), s["peak_replicas"], c["peak_replicas"], pools, p["lb_flows"], pct(occ)),
              pools <= limit * p["lb_flows"] + 1e-9)
        check("budget: the table never filled (peak %s < 95%%)" % pct(occ), occ is not None and occ < 0.95)
        check("budget: the bystander behind it served (errors at the peak %s < 1%%)" % pct(bys),
              bys is not None and bys < 0.01)
        check("budget: both services got a share (peak replicas shop %d, cart %d; %d at the start)"
              % (s["peak_replicas"], c["peak_replicas"], p["start_replicas"]),
              s["peak_replicas"] > s["start_replicas"] and c["peak_replicas"] > c["start_replicas"])
    overshoot_check(p, "shop", s, check)
    overshoot_check(p, "cart", c, check)


def retry_storm_checks(p, figures, check):
    n, g = figures["noguard"], figures["guard"]
    th = p["retry_threshold"]
    check("proxies: the guarded arm's edge HAProxy counted a retry storm (retry share up to %s at the peak, "
          "> threshold %g; client's over the hold %s, proxy's %s)"
          % (num(g.get("proxy_retry_share_max_at_peak")), th, num(g.get("client_retry_share_over_hold")),
             num(g.get("proxy_retry_share_over_hold"))),
          (g.get("proxy_retry_share_max_at_peak") or 0) > th)
    check("guard: its decisions carry the retry discount (%s of %s say \"retries discounted\"; no guard: %s)"
          % (g.get("decisions_retries_discounted"), g.get("decisions"), n.get("decisions_retries_discounted")),
          (g.get("decisions_retries_discounted") or 0) > 0 and n.get("decisions_retries_discounted") == 0)
    check("guard: no recommendation below the current count while the proxies' share > %g (%s below of %s "
          "decisions in the storm; no guard: %s below of %s)"
          % (th, g.get("decisions_below_current_while_share_above_threshold"),
             g.get("decisions_while_share_above_threshold"),
             n.get("decisions_below_current_while_share_above_threshold"),
             n.get("decisions_while_share_above_threshold")),
          (g.get("decisions_while_share_above_threshold") or 0) > 0
          and g.get("decisions_below_current_while_share_above_threshold") == 0)
    check("guard: fewer peak replicas than without it (%d < %d)" % (g["peak_replicas"], n["peak_replicas"]),
          g["peak_replicas"] < n["peak_replicas"])
    overshoot_check(p, "guard", g, check)
    recovered_check("guard", g, p, check)


def client_checks(arm, f, check):
    """What the load client measured: it sent the profile on time and in full."""
    check("%s: Prometheus scraped the load client" % arm, f["scraped"])
    lag = f.get("max_start_lag_ms")
    check("%s: the client started every arrival on time (max start lag %s ms < %d ms)" % (arm, num(lag), MAX_LAG_MS),
          f["client_summary"] and lag is not None and lag < MAX_LAG_MS)
    check("%s: the client dropped no arrival (drops %s)" % (arm, f.get("drops")),
          f["client_summary"] and f.get("drops") == 0)
    check("%s: the client finished every request (abandoned %s)" % (arm, f.get("abandoned")),
          f["client_summary"] and f.get("abandoned") == 0)


# The bound is what issue 22 asked: + 2 over the peak's need at the target. The need is
# the larger of the nominal one (350/s at 50/s a pod, 70%: 10) and the one the sidecars
# measured (their in-flight count over the hold's second half at 70% of maxconn), so a
# machine that slows every pod (runs/...-loaded-1/2/3.json: load 20-60, settled pods at
# 88-94% in flight with 16 replicas, errors for 58 s or for good) raises the need rather
# than failing an autoscaler that read it right, while an overshoot of the controller's
# own making still fails: runs/blind-vs-aware-short-2026-12-02-overshoot.json, newly
# Ready pods counted twice, 14 replicas while requests took their nominal time (p50
# 204 ms of 200: a need of 10). tests/lab/test_report.py pins both cases. The mean
# hides single readings: a clean-clone run (2026-12-07) read 64-87 in flight in the late
# peak (mean 68.5, need 10) and meshscaler, with no scale-up stabilization, followed the
# 87 to 13 replicas, what that reading asks at 70%. So the bound is also at least what
# the highest reading asks, with no slack on top.
OVERSHOOT_SLACK = 2
# Past this the client itself shapes the load (e2e/lab/README.md, max_start_lag_ms).
# Clean runs on 2 cores measured 36-161 ms, edge-flows the most (its pods start
# while the client runs); a pause of the whole machine shows in both arms at once
# (edge-flows, 2 December: 115.7 and 114.3 ms), which is the machine, not a client
# behind. A client a second late fails (a replay with its lag set to 1,012 ms).
MAX_LAG_MS = 500


def keep_answers(path):
    with open(path, "w") as f:
        json.dump(ANSWERS, f)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        p = json.load(f)
    if len(sys.argv) > 3 and sys.argv[2] == "--live":
        live(p, float(sys.argv[3]))
        return 0
    kept = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "prometheus.json")
    if len(sys.argv) > 2 and sys.argv[2] == "--replay":
        global REPLAY
        REPLAY = True
        try:
            with open(kept) as f:
                ANSWERS.update(json.load(f))
        except (OSError, ValueError) as e:
            sys.exit("report.py --replay: cannot read the kept answers %s: %s" % (kept, e))
    elif len(sys.argv) > 2:
        sys.exit("report.py: unknown option %s (see the top of this file)" % sys.argv[2])
    else:
        atexit.register(keep_answers, kept)  # also when a figure below fails to compute
    url = p["prometheus_url"]
    out = p["out_dir"]
    os.makedirs(out, exist_ok=True)
    scenario = p["scenario"]
    arms = list(p["arms"])
    figures, series, replicas = {}, {}, {}
    occupancy = {}
    retry_share = {}
    for arm, a in p["arms"].items():
        figures[arm], series[arm], replicas[arm] = arm_figures(p, arm, a, url)
        edge, occupancy[arm] = edge_figures(p, a, url)
        figures[arm].update(edge)
        retry, retry_share[arm] = retry_figures(p, arm, a, url)
        figures[arm].update(retry)

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
    # What the peak needs at the autoscalers' target (70% of what a pod admits): the
    # overshoot bound's base.
    p["needed_at_target"] = math.ceil(p["peak_rate"] / (p["pod_admits_per_s"] * p["target_utilization"] / 100) - 1e-9)
    summary = {
        "scenario": scenario,
        "variant": p.get("variant") or None,
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
            "replicas_needed_at_peak_at_target": p["needed_at_target"],
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
        client_checks(arm, f, check)
    if scenario == "blind-vs-aware":
        blind_vs_aware_checks(p, figures, needed, check, summary)
    elif scenario == "retry-storm":
        retry_storm_checks(p, figures, check)
    elif scenario == "shared-edge":
        shared_edge_checks(p, figures, check)
    else:
        edge_flows_checks(p, figures, check)
    summary["checks"] = checks
    # The run's settings (the chart is redrawn from them), without this machine's paths.
    summary["params"] = {k: v for k, v in p.items()
                         if not k.endswith("_log") and not k.endswith("_json") and k not in ("out_dir", "arms", "prometheus_url", "timings")}

    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
        f.write("\n")
    with open(os.path.join(out, "series.json"), "w") as f:
        json.dump({"peak_start_s": p["base_s"], "hold_start_s": p["base_s"] + p["ramp_s"],
                   "hold_end_s": p["base_s"] + p["ramp_s"] + p["hold_s"], "duration_s": p["duration_s"],
                   "rates": series, "replicas": replicas, "occupancy": occupancy,
                   "retry_share": retry_share}, f)
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
        ("client: max start lag (ms)", "max_start_lag_ms", num),
        ("client: drops / abandoned", None, "client"),
    ]
    if p.get("retry_share_queries"):
        rows += [("proxy retry share, peak max", "proxy_retry_share_max_at_peak", num),
                 ("retry share over the hold: proxy", "proxy_retry_share_over_hold", num),
                 ("retry share over the hold: client", "client_retry_share_over_hold", num),
                 ("decisions, retries discounted", "decisions_retries_discounted", num)]
    if p.get("lb_flows"):
        rows += [("balancer flows, peak occupancy", "edge_occupancy_peak", pct),
                 ("bystander errors at the peak", "bystander_errors_share_at_peak", pct)]
    for label, key, f in rows:
        if f == "client":
            vals = ["%s / %s" % (figures[a].get("drops"), figures[a].get("abandoned")) for a in arms]
        elif key is None:
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
