#!/usr/bin/env python3
"""soak_check.py - the drivers and the judge of bench/soak.sh.

  init N DIR LOG [--seed S]      the first load of every object: writes the
                                 exposition DIR/metrics and one line per object
                                 to LOG ("WALL NAMESPACE NAME LOAD")
  load N DIR LOG [--seed S] [--every LO HI]
                                 the load driver: a random walk per object, a
                                 step every LO..HI seconds (uniform), each
                                 published (atomic rename) and then appended to
                                 LOG with the moment of the rename. SIGTERM:
                                 a last line "WALL - stop -" and exit 0
  faults --proxy NAME=KIND:CONTROL_PORT... --seconds S LOG [--seed S] [--stop-pid P]
                                 the fault driver: one thread per proxy (KIND
                                 api or prom) picks a fault, holds it, ends it
                                 (a blackhole ends with reset, 1 s, pass, as
                                 t_failover.sh does), waits, picks again, for S
                                 seconds; then every proxy passes (and P, the
                                 load driver, gets SIGTERM). One JSON line
                                 per fault in LOG; prints the end of the last
                                 fault (wall seconds)
  watch LOG                      every change of a Deployment's spec.replicas
                                 as seen by a watch of the API server (admin
                                 credentials, no proxy): "WALL NS NAME REPLICAS RV"
  recover LOADS --since T --deadline S --stable S [--min --max --target]
                                 poll the Deployments until each has the count
                                 its last load asks for, then check it holds
                                 for --stable seconds; prints one JSON line
  check ...                      the audit log, the watch and the loads judged:
                                 writes outside their writer's lease term, and
                                 writes that moved against the metrics; prints
                                 a report and one JSON line of figures

Python 3.11 standard library only; kubectl from $KUBECTL with $KUBECONFIG.
"""
import argparse
import bisect
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from datetime import datetime, timezone

LOAD_MAX = 250
STEP = 50


def names(n):
    return [(f"soak-{i // 100}", f"w{i}") for i in range(n)]


def expected(load, lo, hi, target):
    """The replicas an AverageValue target of `target` asks for `load`,
    within [lo, hi] (tolerance 0: the ask itself)."""
    return max(lo, min(hi, math.ceil(load / target)))


# ---- the exposition ------------------------------------------------------------

def publish(directory, objs, loads):
    lines = ["# TYPE soak_load gauge"]
    for (ns, name), v in zip(objs, loads):
        lines.append(f'soak_load{{namespace="{ns}",workload="{name}"}} {v}')
    tmp = os.path.join(directory, ".metrics.tmp")
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, os.path.join(directory, "metrics"))
    return time.time()


def cmd_init(a):
    rnd = random.Random(a.seed)
    objs = names(a.n)
    loads = [rnd.randint(0, 200) for _ in objs]
    t = publish(a.dir, objs, loads)
    with open(a.log, "w") as f:
        for (ns, name), v in zip(objs, loads):
            f.write(f"{t:.6f} {ns} {name} {v}\n")


def read_loads(path):
    """{(ns, name): [(t, load), ...]} in time order, and the stop time."""
    out, stop = {}, None
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) != 4:
                continue
            if p[2] == "stop":
                stop = float(p[0])
                continue
            out.setdefault((p[1], p[2]), []).append((float(p[0]), int(p[3])))
    return out, stop


def cmd_load(a):
    rnd = random.Random(a.seed)
    objs = names(a.n)
    hist, _ = read_loads(a.log)
    loads = [hist[o][-1][1] for o in objs]
    now = time.time()
    due = [now + rnd.uniform(a.every[0], a.every[1]) for _ in objs]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open(a.log, "a", buffering=1) as log:
        while not stop.is_set():
            now = time.time()
            changed = []
            for i, d in enumerate(due):
                if d <= now:
                    step = 0
                    while step == 0:
                        step = rnd.randint(-STEP, STEP)
                    loads[i] = max(0, min(LOAD_MAX, loads[i] + step))
                    due[i] = now + rnd.uniform(a.every[0], a.every[1])
                    changed.append(i)
            if changed:
                t = publish(a.dir, objs, loads)
                for i in changed:
                    log.write(f"{t:.6f} {objs[i][0]} {objs[i][1]} {loads[i]}\n")
            stop.wait(max(0.05, min(0.25, min(due) - time.time())))
        log.write(f"{time.time():.6f} - stop -\n")


# ---- faults ----------------------------------------------------------------------

API_FAULTS = [("latency", 30), ("blackhole", 25), ("reset", 20), ("trickle", 25)]
PROM_FAULTS = [("latency", 25), ("blackhole", 20), ("reset", 15), ("status", 25), ("trickle", 15)]


def control(port, query):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/mode?{query}", timeout=5) as r:
        return json.load(r)


def fault_thread(name, kind, port, deadline, rnd, log, lock, ends):
    table = API_FAULTS if kind == "api" else PROM_FAULTS
    modes = [m for m, _ in table]
    weights = [w for _, w in table]
    time.sleep(rnd.uniform(0, 10))
    while True:
        now = time.time()
        if now >= deadline - 2:
            return
        mode = rnd.choices(modes, weights)[0]
        hold = rnd.uniform(5, 30) if mode == "blackhole" else rnd.uniform(2, 25)
        hold = min(hold, deadline - now)
        params = {}
        if mode == "latency":
            params["ms"] = rnd.choice([100, 300, 1000, 2500])
        elif mode == "trickle":
            params["bytes_per_s"] = rnd.choice([200, 2000, 20000])
        elif mode == "status":
            params["code"] = rnd.choice([429, 503])
            if rnd.random() < 0.5:
                params["retry_after"] = rnd.choice([1, 5])
        query = "set=" + mode + "".join(f"&{k}={v}" for k, v in params.items())
        t0 = time.time()
        if mode == "status":
            # Open connections keep forwarding in status mode: reset them
            # first, so the client's next requests meet the status.
            control(port, "set=reset")
        control(port, query)
        time.sleep(hold)
        if mode == "blackhole":
            control(port, "set=reset")  # the frozen connections are dropped
            time.sleep(1)
        control(port, "set=pass")
        t1 = time.time()
        with lock:
            log.write(json.dumps({"proxy": name, "kind": kind, "mode": mode, "params": params,
                                  "start": round(t0, 6), "end": round(t1, 6)}) + "\n")
            ends.append(t1)
        gap = rnd.uniform(2, 25)
        if time.time() + gap >= deadline - 2:
            return  # no room for another: this proxy's faults are over
        time.sleep(gap)


def cmd_faults(a):
    rnd = random.Random(a.seed)
    deadline = time.time() + a.seconds
    lock = threading.Lock()
    ends = []
    threads = []
    with open(a.log, "a", buffering=1) as log:
        for spec in a.proxy:
            name, rest = spec.split("=", 1)
            kind, port = rest.split(":")
            t = threading.Thread(target=fault_thread, daemon=True,
                                 args=(name, kind, int(port), deadline, random.Random(rnd.random()),
                                       log, lock, ends))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        for spec in a.proxy:
            control(spec.split(":")[-1], "set=pass")
    if a.stop_pid:
        os.kill(a.stop_pid, signal.SIGTERM)  # the load stops moving with the faults
    print(f"{max(ends) if ends else time.time():.6f}")


def read_faults(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


# ---- the watch -------------------------------------------------------------------

def kubectl(*args):
    return [os.environ.get("KUBECTL", "kubectl"), "--kubeconfig", os.environ["KUBECONFIG"], *args]


def cmd_watch(a):
    stop = threading.Event()
    proc = None

    def on_term(*_):
        stop.set()
        if proc is not None:
            proc.terminate()

    signal.signal(signal.SIGTERM, on_term)
    seen, rv = {}, ""
    with open(a.log, "a", buffering=1) as log:
        while not stop.is_set():
            path = "/apis/apps/v1/deployments?watch=1&timeoutSeconds=3600"
            if rv:
                path += f"&resourceVersion={rv}"
            proc = subprocess.Popen(kubectl("get", "--raw", path), stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
            for line in proc.stdout:
                t = time.time()
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                obj = ev.get("object", {})
                if ev.get("type") == "ERROR":
                    rv = ""  # 410 Gone and the like: list again
                    break
                md = obj.get("metadata", {})
                rv = md.get("resourceVersion", rv)
                if not md.get("namespace", "").startswith("soak-"):
                    continue
                key = (md["namespace"], md["name"])
                r = obj.get("spec", {}).get("replicas")
                if ev.get("type") == "DELETED" or r is None or seen.get(key) == r:
                    continue
                seen[key] = r
                log.write(f"{t:.6f} {key[0]} {key[1]} {r} {rv}\n")
            proc.terminate()
            proc.wait()
            if not stop.is_set():
                time.sleep(0.5)


def read_watch(path):
    """{(ns, name): [(t, replicas), ...]}"""
    out = {}
    with open(path) as f:
        for line in f:
            p = line.split()
            if len(p) == 5:
                out.setdefault((p[1], p[2]), []).append((float(p[0]), int(p[3])))
    return out


# ---- recovery --------------------------------------------------------------------

def deployments():
    r = subprocess.run(kubectl("get", "deployments", "-A", "--no-headers", "-o",
                               "custom-columns=NS:.metadata.namespace,NAME:.metadata.name,R:.spec.replicas"),
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        return None
    out = {}
    for line in r.stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[0].startswith("soak-") and p[2].isdigit():
            out[(p[0], p[1])] = int(p[2])
    return out


def mismatches(want, have):
    return sorted(k for k in want if have.get(k) != want[k])


def cmd_recover(a):
    hist, _ = read_loads(a.loads)
    want = {k: expected(v[-1][1], a.min, a.max, a.target) for k, v in hist.items()}
    end = time.time() + a.deadline
    matched_at, have, trace = None, {}, []
    while time.time() < end:
        have = deployments() or have
        if have:
            n = len(mismatches(want, have))
            if not trace or trace[-1][1] != n:
                trace.append((round(time.time() - a.since, 1), n))
            if n == 0:
                matched_at = time.time()
                break
        time.sleep(0.5)
    # Then it must hold (a late stale write would undo it).
    if matched_at is not None:
        time.sleep(a.stable)
        have = deployments() or have
    bad = mismatches(want, have)
    print(json.dumps({
        "recovered_after": None if matched_at is None else round(matched_at - a.since, 1),
        "mismatches": len(bad),
        "trace": trace,  # (seconds since --since, Deployments not at their count) at each change
        "examples": [f"{k[0]}/{k[1]}: replicas {have.get(k)}, load {hist[k][-1][1]} asks {want[k]}"
                     for k in bad[:10]],
    }))


# ---- the judge -------------------------------------------------------------------

def ts(s):
    return datetime.strptime(s.rstrip("Z")[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
        tzinfo=timezone.utc).timestamp() if "." in s else datetime.strptime(
        s.rstrip("Z"), "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc).timestamp()


def who(ev):
    ua = ev.get("userAgent", "")
    return ua[ua.find("(") + 1:ua.rfind(")")] if "(" in ua else ua


def read_audit(path, lease_ns, lease_name):
    """Successful Lease writes [(received, completed, who)] and scale writes
    {(ns, name): [(received, completed, who)]} of the soak's namespaces."""
    leases, scales, refused = [], {}, {}
    with open(path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("stage") != "ResponseComplete" or ev.get("verb") not in ("create", "update", "patch"):
                continue
            code = ev.get("responseStatus", {}).get("code", 0)
            ref = ev.get("objectRef", {})
            if not 200 <= code < 300:
                if ref.get("subresource") == "scale" and ref.get("namespace", "").startswith("soak-"):
                    k = (who(ev), code)
                    refused[k] = refused.get(k, 0) + 1
                continue
            rec = (ts(ev["requestReceivedTimestamp"]), ts(ev["stageTimestamp"]), who(ev))
            if ref.get("resource") == "leases" and ref.get("namespace") == lease_ns and ref.get("name") == lease_name:
                leases.append(rec)
            elif (ref.get("resource") == "deployments" and ref.get("subresource") == "scale"
                  and ref.get("namespace", "").startswith("soak-")):
                scales.setdefault((ref["namespace"], ref["name"]), []).append(rec)
    leases.sort()
    for v in scales.values():
        v.sort()
    return leases, scales, refused


def judge_terms(leases, scales, duration):
    """Double writes: a scale write whose last Lease write before it is
    another identity's, or older than the lease duration (t_failover.sh's
    rule), plus writes still in flight when another identity acquired."""
    lt = [t for t, _, _ in leases]
    bad, inflight = [], []
    acquisitions = [(t, w) for (t, _, w), (_, _, pw) in zip(leases[1:], leases[:-1]) if w != pw]
    acq_t = [t for t, _ in acquisitions]
    for key, writes in scales.items():
        for rt, ct, w in writes:
            i = bisect.bisect_right(lt, rt) - 1
            if i < 0:
                bad.append((rt, f"{w} wrote {key[0]}/{key[1]} at {rt:.3f} before any Lease write"))
                continue
            t0, _, holder = leases[i]
            if holder != w:
                bad.append((rt, f"{w} wrote {key[0]}/{key[1]} at {rt:.3f} while {holder} held the Lease (since {t0:.3f})"))
            elif rt - t0 > duration:
                bad.append((rt, f"{w} wrote {key[0]}/{key[1]} at {rt:.3f}, {rt - t0:.1f} s after its last Lease write"))
            else:
                j = bisect.bisect_right(acq_t, rt)
                if j < len(acquisitions) and acquisitions[j][1] != w and acquisitions[j][0] < ct:
                    inflight.append((rt, f"{w}'s write of {key[0]}/{key[1]} received {rt:.3f} completed {ct:.3f}, "
                                         f"after {acquisitions[j][1]} acquired at {acquisitions[j][0]:.3f}"))
    # Terms by the server's clock: a takeover earlier than the previous
    # holder's last renewal + duration (informational: the elector dates a
    # change up to (duration - deadline) / 2 back, by design).
    early = []
    for k in range(1, len(leases)):
        t, _, w = leases[k]
        pt, _, pw = leases[k - 1]
        if w != pw and pw and w and t - pt < duration:
            early.append(t - pt)
    return sorted(bad), sorted(inflight), acquisitions, early


class History:
    """One object's load as a step function of time."""

    def __init__(self, points):
        self.t = [p[0] for p in points]
        self.v = [p[1] for p in points]

    def segments_back(self, t):
        """(start, end, load) of the segments at or before t, newest first."""
        i = bisect.bisect_right(self.t, t) - 1
        end = t
        while i >= 0:
            yield self.t[i], end, self.v[i]
            end = self.t[i]
            i -= 1


def justify_age(h, t, ok):
    """How far back from t the newest load satisfying ok(load) was in force:
    0 when the load at t does; None when none ever did."""
    for start, end, v in h.segments_back(t):
        if ok(v):
            return max(0.0, t - end)
    return None


def cmd_check(a):
    loads, _ = read_loads(a.loads)
    hist = {k: History(v) for k, v in loads.items()}
    watch = read_watch(a.watch)
    leases, scales, refused = read_audit(a.audit, a.lease_ns, a.lease_name)
    faults = read_faults(a.faults) if a.faults else []
    bad, inflight, acquisitions, early = judge_terms(leases, scales, a.duration)

    def exp(v):
        return expected(v, a.min, a.max, a.target)

    def api_faulted(proxy, t0, t1):
        """A fault on this controller's own API proxy during [t0, t1]: one
        that may have held this very write (or the writes queued before it)
        in flight. Prometheus faults are not: the observation is dated at
        the round's start, and a round's queries end by the round timeout,
        which the tight bound already allows for."""
        return any(f["proxy"] == proxy and f["start"] < t1 and f["end"] > t0 for f in faults)

    # Which proxy each identity went through: from the soak's identity map.
    proxy_of = dict(p.split("=", 1) for p in a.identity_proxy)

    against, against_tight, offtarget = [], [], []
    ages = []
    nwrites = nchanges = unmatched = 0
    per_writer = {}
    for key, changes in watch.items():
        writes = scales.get(key, [])
        nwrites += len(writes)
        per_writer_key = [w for _, _, w in writes]
        for w in per_writer_key:
            per_writer[w] = per_writer.get(w, 0) + 1
        h = hist.get(key)
        if h is None:
            continue
        prev, prev_t = None, 0.0
        for t_seen, r in changes:
            if prev is None:
                prev, prev_t = r, t_seen
                continue
            nchanges += 1
            old, new = prev, r
            # The write behind this change: the last audited write received
            # after the previous change was seen and before this one was.
            writer, t = "?", t_seen
            cand = [w for w in writes if prev_t < w[0] <= t_seen]
            if cand:
                t, writer = cand[-1][0], cand[-1][2]
            else:
                unmatched += 1
            prev, prev_t = r, t_seen
            up = new > old
            age = justify_age(h, t, (lambda v: exp(v) > old) if up else (lambda v: exp(v) < old))
            exact = justify_age(h, t, lambda v: exp(v) == new)
            ages.append(age if age is not None else float("inf"))
            faulted = api_faulted(proxy_of.get(writer, ""), t - a.tight, t)
            limit = a.loose if faulted else a.tight
            desc = (f"{key[0]}/{key[1]} {old}->{new} at {t:.3f} by {writer}: loads before: "
                    + ", ".join(f"{v}@{t - s:.1f}s" for s, _, v in list(h.segments_back(t))[:4])
                    + f" (a fault on its API proxy in the {a.tight:.0f} s before: {'yes' if faulted else 'no'}; justified by a load {age if age is None else round(age, 1)} s old)")
            if age is None or age > limit:
                against.append(desc)
            elif age > a.tight:
                against_tight.append(desc)
            if exact is None or exact > limit:
                offtarget.append(desc + f"; the nearest ask {new} was {exact if exact is None else round(exact, 1)} s old")

    fin = [x for x in ages if x != float("inf")]
    fin.sort()

    def pct(p):
        return fin[min(len(fin) - 1, int(p * len(fin)))] if fin else 0.0

    print(f"  audit: {sum(len(v) for v in scales.values())} scale writes by {len(per_writer)} identities "
          f"({', '.join(f'{w}: {n}' for w, n in sorted(per_writer.items()))}); "
          f"{len(leases)} Lease writes, {len(acquisitions)} hand-over(s)")
    if refused:
        print("  scale writes the API server refused: " + ", ".join(
            f"{w}: {n} x {code}" for (w, code), n in sorted(refused.items())))
    if early:
        print(f"  Lease: {len(early)} takeover(s) sooner than the previous holder's last renewal + {a.duration:.0f} s "
              f"(earliest after {min(early):.1f} s; the elector dates a change back by design)")
    print(f"  watch: {nchanges} replica changes ({unmatched} without a matching audited write)")
    print(f"  direction: the load that justified each change was {pct(0.5):.1f} s old at the median, "
          f"{pct(0.99):.1f} s at p99, {fin[-1] if fin else 0:.1f} s at most "
          f"(allowed {a.tight:.0f} s; {a.loose:.0f} s when the writer's own API proxy had a fault in the {a.tight:.0f} s before the write)")
    for title, rows in (("double writes", bad), ("writes in flight across a hand-over", inflight),
                        ("writes against the metrics", against),
                        ("writes justified only by a load older than the tight bound (allowed: a fault on the writer's API proxy)", against_tight),
                        ("writes to a count no recent load asked for", offtarget)):
        if rows:
            print(f"  {title}: {len(rows)}")
            for r in rows[:8]:
                print(f"    {r if isinstance(r, str) else r[1]}")
    print("FIGURES " + json.dumps({
        "double_writes": len(bad), "inflight_at_handover": len(inflight),
        "against_metrics": len(against), "off_target": len(offtarget), "late_justified": len(against_tight),
        "audited_scale_writes": sum(len(v) for v in scales.values()), "replica_changes": nchanges,
        "unmatched_changes": unmatched, "handovers": len(acquisitions), "lease_writes": len(leases),
        "writers": per_writer, "refused": {f"{w} {c}": n for (w, c), n in refused.items()},
    }))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("init")
    p.add_argument("n", type=int)
    p.add_argument("dir")
    p.add_argument("log")
    p.add_argument("--seed", type=int, default=1)
    p = sub.add_parser("load")
    p.add_argument("n", type=int)
    p.add_argument("dir")
    p.add_argument("log")
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--every", type=float, nargs=2, default=[10.0, 40.0])
    p = sub.add_parser("faults")
    p.add_argument("--proxy", action="append", required=True)
    p.add_argument("--seconds", type=float, required=True)
    p.add_argument("--seed", type=int, default=3)
    p.add_argument("--stop-pid", type=int, help="SIGTERM this process (the load driver) at the end")
    p.add_argument("log")
    p = sub.add_parser("watch")
    p.add_argument("log")
    for name in ("recover", "check"):
        p = sub.add_parser(name)
        p.add_argument("--min", type=int, default=1)
        p.add_argument("--max", type=int, default=20)
        p.add_argument("--target", type=float, default=10.0)
    p = sub.choices["recover"]
    p.add_argument("loads")
    p.add_argument("--since", type=float, required=True)
    p.add_argument("--deadline", type=float, default=180)
    p.add_argument("--stable", type=float, default=10)
    p = sub.choices["check"]
    p.add_argument("--loads", required=True)
    p.add_argument("--watch", required=True)
    p.add_argument("--audit", required=True)
    p.add_argument("--faults")
    p.add_argument("--lease-ns", required=True)
    p.add_argument("--lease-name", required=True)
    p.add_argument("--duration", type=float, default=15)
    p.add_argument("--tight", type=float, default=8)
    p.add_argument("--loose", type=float, default=30)
    p.add_argument("--identity-proxy", action="append", default=[],
                   help="IDENTITY=PROXY: the API proxy a controller went through")
    a = ap.parse_args()
    {"init": cmd_init, "load": cmd_load, "faults": cmd_faults, "watch": cmd_watch,
     "recover": cmd_recover, "check": cmd_check}[a.cmd](a)


if __name__ == "__main__":
    main()
