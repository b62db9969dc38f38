#!/usr/bin/env python3
"""timeline.py - the parity test's sampler and its checks (run.sh).

  timeline.py sample NS NAME EXPOSITION
      Every second, one line of JSON on stdout: the HPA's, the MeshAutoscaler's
      and the Deployment NAME's status in namespace NS (one `kubectl get` for
      the three) and the value the test's exporter serves (EXPOSITION, the
      parity_load series). Runs until killed.

  timeline.py check SAMPLES CONTROLLER_LOG PHASES COMPARISON PERIOD NS NAME
      SAMPLES is the sampler's output, CONTROLLER_LOG the controller's JSON log
      (--log-level debug: one "decided" line per sync), PHASES the lines
      "EPOCH NAME VALUE" run.sh wrote when it set a value (the first is the
      start of the compared stretch, a line "EPOCH end -" its end), COMPARISON
      the MeshAutoscaler's final status.hpaComparison, PERIOD the sync period
      of both in seconds. Prints the timeline, one row per MeshAutoscaler sync,
      then one "ok ..." or "FAIL ..." line per check, and the figures.

"One sync of lag": the HPA and the MeshAutoscaler sync on grids of their own,
P seconds apart each, so after a change (a new metric value, or the other's
scale that moved the current count) one of them may decide on it up to one
period before the other. A MeshAutoscaler decision matches when the HPA's
desired count took the same value within P + SLACK seconds of it, before or
after; SLACK covers the sampler's one-second step and the API round trips.
"""
import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime, timezone

SLACK = 3.0


def quantity(q):
    """A Kubernetes quantity as a float ("10750m", "21", "1.5k"); None for None."""
    if q is None:
        return None
    m = re.fullmatch(r"([0-9.]+)([mkMG]?)", str(q))
    if not m:
        raise ValueError("not a quantity: %r" % q)
    return float(m.group(1)) * {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9}[m.group(2)]


def served_value(path):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("parity_load{"):
                    return float(line.split()[-1])
    except OSError:
        pass
    return None


def hpa_view(o):
    st = o.get("status", {})
    total = None
    for m in st.get("currentMetrics") or []:
        if m.get("type") == "External":
            cur = m["external"]["current"]
            if cur.get("averageValue") is not None and st.get("currentReplicas"):
                # the HPA reports the total over its pods' count, per pod
                total = quantity(cur["averageValue"]) * st["currentReplicas"]
            elif cur.get("value") is not None:
                total = quantity(cur["value"])
    return {"desired": st.get("desiredReplicas"), "current": st.get("currentReplicas"), "read": total}


def mas_view(o):
    st = o.get("status", {})
    metrics = st.get("currentMetrics") or [{}]
    cmp = st.get("hpaComparison") or {}
    return {"desired": st.get("desiredReplicas"), "current": st.get("currentReplicas"),
            "read": metrics[0].get("value"), "syncs": cmp.get("syncs"),
            "differing": cmp.get("differingSyncs")}


def sample(ns, name, exposition):
    kubectl = os.environ.get("KUBECTL", "kubectl")
    objs = ["horizontalpodautoscalers.autoscaling/" + name,
            "meshautoscalers.autoscaling.meshscaler.io/" + name, "deployments.apps/" + name]
    nxt = time.time()
    while True:
        t = time.time()
        row = {"t": round(t, 3), "served": served_value(exposition)}
        try:
            out = subprocess.run([kubectl, "get", "-n", ns, "-o", "json"] + objs, check=True,
                                 capture_output=True, text=True, timeout=5).stdout
            for o in json.loads(out)["items"]:
                kind = o["kind"]
                if kind == "HorizontalPodAutoscaler":
                    row["hpa"] = hpa_view(o)
                elif kind == "MeshAutoscaler":
                    row["mas"] = mas_view(o)
                elif kind == "Deployment":
                    row["replicas"] = o["spec"].get("replicas")
                    row["ready"] = o.get("status", {}).get("readyReplicas", 0)
        except (subprocess.SubprocessError, ValueError, KeyError) as e:
            row["error"] = str(e)[:200]
        print(json.dumps(row), flush=True)
        nxt += 1.0
        time.sleep(max(0.0, nxt - time.time()))


def epoch(ts):
    """The controller log's "2026-12-02T01:23:45.678Z" as seconds since the epoch."""
    return datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=timezone.utc).timestamp()


def load(samples_path, log_path, phases_path, object_key):
    samples = []
    for line in open(samples_path):
        try:
            samples.append(json.loads(line))
        except ValueError:
            pass  # a line cut by the sampler's end
    syncs = []
    for line in open(log_path):
        try:
            o = json.loads(line)
        except ValueError:
            continue
        if o.get("msg") == "decided" and o.get("object") == object_key:
            syncs.append((epoch(o["ts"]), o["current"], o["desired"], o.get("reason", "")))
    phases = []
    for line in open(phases_path):
        t, name, value = line.split()
        phases.append((float(t), name, value))
    return samples, syncs, phases


class Steps:
    """The HPA's desired count over time, from the samples (a step function)."""

    def __init__(self, samples):
        self.points = [(s["t"], s["hpa"]["desired"]) for s in samples
                       if s.get("hpa") and s["hpa"]["desired"] is not None]

    def at(self, t):
        v = None
        for ts, d in self.points:
            if ts > t:
                break
            v = d
        return v

    def values_within(self, a, b):
        vals = {d for ts, d in self.points if a <= ts <= b}
        before = self.at(a)
        if before is not None:
            vals.add(before)
        return vals

    def changes(self, a, b):
        out, prev = [], self.at(a)
        for ts, d in self.points:
            if a < ts <= b and d != prev:
                out.append((ts, prev, d))
                prev = d
        return out


def after(samples, t, key):
    """The first sample at or after t that has KEY."""
    for s in samples:
        if s["t"] >= t and s.get(key):
            return s
    return None


def distinct(seq):
    out = []
    for v in seq:
        if not out or out[-1] != v:
            out.append(v)
    return out


def fmt(v):
    return "-" if v is None else ("%g" % v if isinstance(v, float) else str(v))


def check(samples_path, log_path, phases_path, comparison_path, period, ns, name):
    samples, syncs, phases = load(samples_path, log_path, phases_path, ns + "/" + name)
    results = []

    def result(good, what):
        results.append(("ok   " if good else "FAIL ") + what)

    start = phases[0][0]
    end = next((t for t, n, _ in phases if n == "end"), samples[-1]["t"] if samples else start)
    lag = period + SLACK
    hpa = Steps(samples)
    mine = [s for s in syncs if start <= s[0] <= end]

    def phase_at(t):
        cur = phases[0]
        for p in phases:
            if p[0] <= t and p[1] != "end":
                cur = p
        return cur

    print("     timeline (one row per MeshAutoscaler sync; s since the first phase; "
          "HPA/MAS read = the metric's total as each last reported it):")
    print("     %7s  %-9s %7s %9s %9s %6s %6s  %s" % ("t", "phase", "served", "HPA read", "MAS read",
                                                     "HPA", "MAS", ""))
    mismatches = []
    for t, current, desired, reason in mine:
        s = after(samples, t + 0.5, "mas") or {}
        ph = phase_at(t)
        h_now = hpa.at(t)
        matched = desired in hpa.values_within(t - lag, t + lag)
        note = "" if desired == h_now else ("(one sync apart)" if matched else "MISMATCH")
        if not matched:
            mismatches.append("t=%.0f s MAS %s, HPA within %.0f s: %s" % (
                t - start, desired, lag, sorted(hpa.values_within(t - lag, t + lag))))
        print("     %7.1f  %-9s %7s %9s %9s %6s %6s  %s" % (
            t - start, ph[1], ph[2], fmt((s.get("hpa") or {}).get("read")),
            fmt((s.get("mas") or {}).get("read")), fmt(h_now), desired, note))

    result(len(mine) >= 2 and not mismatches,
           "parity: each of %d MeshAutoscaler syncs decided what the HPA decided within one sync (%.0f s)%s"
           % (len(mine), period, "" if not mismatches else ": " + "; ".join(mismatches[:4])))

    # A shadow MeshAutoscaler reads the current count the HPA wrote. When the
    # HPA reads a new value first and writes its step (2 -> 4), the
    # MeshAutoscaler's next sync starts from 4 and decides the step after it
    # (6): it never had 2 -> 4 to decide. That skip is parity only when the
    # MeshAutoscaler's own sync, within one period after the HPA's change,
    # read the HPA's new count as its current count; any other missing count
    # is a difference.
    changes = hpa.changes(start, end)
    unmatched, skipped = [], []
    for ts, old, new in changes:
        if any(ts - lag <= t <= ts + lag and d == new for t, _, d, _ in mine):
            continue
        if any(ts < t <= ts + lag and cur == new and d != new for t, cur, d, _ in mine):
            skipped.append(new)
            continue
        unmatched.append("t=%.0f s HPA %s -> %s" % (ts - start, old, new))
    result(not unmatched,
           "parity: each of the HPA's %d changes was decided by the MeshAutoscaler within one "
           "sync%s%s" % (len(changes),
                         "" if not skipped else " (%s: read as its current count, the HPA's "
                         "write, and stepped on from it)" % skipped,
                         "" if not unmatched else ": not " + "; ".join(unmatched)))

    hpa_seq = distinct([hpa.at(start)] + [c[2] for c in changes])
    mas_seq = distinct([d for _, _, d, _ in mine])
    want_seq = distinct([v for v in hpa_seq if v not in skipped])
    result(mas_seq == want_seq, "the same sequence of desired counts: HPA %s, MeshAutoscaler %s%s"
           % (hpa_seq, mas_seq, "" if not skipped else " (less %s, read as current)" % skipped))
    want = [2, 4, 6, 8, 3]
    result(hpa_seq == want,
           "the HPA went through %s (tolerance held at 21.5, Pods 2 per sync bound 75, "
           "the 60 s window then 30): %s" % (want, hpa_seq))

    # Both read the value the test set, at the end of each phase.
    reads = []
    for i, (t, pname, value) in enumerate(phases):
        if pname == "end":
            continue
        t_end = phases[i + 1][0]
        s = None
        for x in samples:
            if x["t"] < t_end and x.get("hpa") and x.get("mas"):
                s = x
        got_h = (s or {}).get("hpa", {}).get("read")
        got_m = (s or {}).get("mas", {}).get("read")
        good = (got_h is not None and got_m is not None and abs(got_h - float(value)) <= 0.01 * float(value)
                and abs(got_m - float(value)) <= 1e-6 * float(value))
        reads.append((good, "%s %s: HPA %s, MAS %s" % (pname, value, fmt(got_h), fmt(got_m))))
    result(all(g for g, _ in reads), "both read the value the test set by the end of each phase: "
           + "; ".join(r for _, r in reads))

    cmp = json.load(open(comparison_path)) if os.path.getsize(comparison_path) else {}
    differing = cmp.get("differingSyncs")
    # (syncs rides along with the next status write, so it may lag by the
    # syncs since the last change; differingSyncs does not: a difference and
    # its end both change what the status shows)
    result(cmp.get("hpa") == name and (cmp.get("syncs") or 0) >= 1 and differing is not None
           and differing <= len(changes),
           "status.hpaComparison: %s differing syncs of %s (<= the HPA's %d changes, one sync of "
           "lag each): %s" % (differing, cmp.get("syncs"), len(changes), json.dumps(cmp, sort_keys=True)))

    for line in results:
        print(line)
    # Figures.
    down = next((p[0] for p in phases if p[1] == "down"), None)
    if down is not None:
        h3 = next((ts for ts, _, new in changes if new == 3 and ts >= down), None)
        m3 = next((t for t, _, d, _ in mine if d == 3 and t >= down), None)
        print("     figures: %.0f s compared, %d MeshAutoscaler syncs, %d HPA changes; after the step "
              "down the HPA held for %s s, the MeshAutoscaler for %s s (window 60 s)" % (
                  end - start, len(mine), len(changes),
                  fmt(None if h3 is None else round(h3 - down)),
                  fmt(None if m3 is None else round(m3 - down))))
    return sum(1 for r in results if r.startswith("FAIL"))


def main(argv):
    if len(argv) >= 5 and argv[1] == "sample":
        sample(argv[2], argv[3], argv[4])
        return 0
    if len(argv) == 9 and argv[1] == "check":
        return 1 if check(argv[2], argv[3], argv[4], argv[5], float(argv[6]), argv[7], argv[8]) else 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
