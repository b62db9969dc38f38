#!/usr/bin/env python3
"""summarize.py - the side by side's figures from bench/controller.sh outputs.

    bench/results/summarize.py FILE...

Each FILE is one run of `bench/controller.sh N W "live hpa"` (or "hpa live"). Every 15 s
window of every run is pooled per system and printed as median and range (min-max),
with the number of windows and the machine's 1-minute load over them. The HPA
controller's CPU is kube-controller-manager's CPU in an hpa window minus its CPU in the
same run's background window (neither autoscaler working); its memory is
kube-controller-manager's RSS in the hpa windows minus its RSS in that background
window. Nothing here measures; it only reads what the bench printed.
"""
import re
import statistics
import sys


def num(pattern, line, default=None):
    m = re.search(pattern, line)
    return float(m.group(1)) if m else default


def parse(path):
    runs = {"mesh": [], "hpa": [], "lat": {"mesh": [], "hpa": []}, "order": []}
    bg_kcm = bg_rss = None
    section = None
    lines = open(path, errors="replace").read().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("background"):
            section = "bg"
        elif re.match(r"^live, \d+ objects", line):
            section = "mesh"
            runs["order"].append("meshscaler")
        elif re.match(r"^hpa, \d+ objects", line):
            section = "hpa"
            runs["order"].append("hpa")
        if section == "bg" and line.startswith("  CPU:"):
            bg_kcm = num(r"kube-controller-manager ([\d.]+) s", line)
        if section == "bg" and "kube-controller-manager RSS" in line:
            bg_rss = num(r"kube-controller-manager RSS (\d+) MiB", line)
        if line.startswith("  metric change to scale:") and section in ("mesh", "hpa"):
            runs["lat"][section] += [float(x) for x in re.findall(r": ([\d.]+) s \(", line)]
            runs["lat"][section] += [None for _ in re.findall(r": none in", line)]
        if not re.match(r"^  15 s #\d+:", line) or section not in ("mesh", "hpa"):
            continue
        cp = lines[i + 1] if i + 1 < len(lines) else ""
        for j in range(i + 1, min(i + 4, len(lines))):
            if "control plane CPU" in lines[j]:
                cp = lines[j]
        w = {
            "apiserver": num(r"kube-apiserver ([\d.]+) s", cp),
            "kcm": num(r"kube-controller-manager ([\d.]+) s", cp),
            "etcd": num(r"etcd ([\d.]+) s", cp),
            "prometheus": num(r"prometheus ([\d.]+) s", cp),
            "load": num(r"load ([\d.]+)", cp),
            "queries": num(r"Prometheus queries (\d+)", line),
            "query_s": num(r"Prometheus queries \d+ \(([\d.]+) s\)", line),
        }
        if section == "mesh":
            w["synced"] = num(r"(\d+) decisions", line)
            for j in range(i + 1, min(i + 4, len(lines))):
                if "decisions by reason" in lines[j]:
                    w["unavailable"] = num(r"MetricsUnavailable (\d+)", lines[j], 0.0)
            w["cpu"] = num(r"controller CPU ([\d.]+) s", line)
            w["rss"] = num(r"RSS (\d+) MiB", line)
            w["round_s"] = num(r"rounds \(([\d.]+) s each\)", line)
        else:
            w["synced"] = num(r"(\d+) HPA syncs", line)
            w["adapter_cpu"] = num(r"adapter CPU ([\d.]+) s", line)
            w["adapter_rss"] = num(r"RSS (\d+) MiB", line)
            w["kcm_rss"] = num(r"kube-controller-manager RSS (\d+) MiB", cp)
            if w["kcm"] is not None and bg_kcm is not None:
                w["hpa_cpu"] = w["kcm"] - bg_kcm
            if w["kcm_rss"] is not None and bg_rss is not None:
                w["hpa_rss"] = w["kcm_rss"] - bg_rss
            w["writes"] = num(r"(\d+) HPA status writes", line)
        runs[section].append(w)
    return runs


def fmt(values, unit=""):
    v = [x for x in values if x is not None]
    if not v:
        return "-"
    med = statistics.median(v)
    digits = 0 if all(float(x).is_integer() for x in v) else 2
    f = f"{{:.{digits}f}}"
    lo, hi = min(v), max(v)
    if lo == hi:
        return f"{f.format(med)}{unit}"
    return f"{f.format(med)}{unit} ({f.format(lo)}-{f.format(hi)})"


def main():
    pooled = {"mesh": [], "hpa": []}
    lat = {"mesh": [], "hpa": []}
    for path in sys.argv[1:]:
        r = parse(path)
        print(f"{path}: order {' then '.join(r['order'])}; windows meshscaler {len(r['mesh'])}, hpa {len(r['hpa'])}")
        for s in pooled:
            pooled[s] += r[s]
            lat[s] += r["lat"][s]
    keys = {
        "mesh": ["synced", "unavailable", "round_s", "cpu", "rss", "apiserver", "prometheus", "etcd", "queries", "query_s", "load"],
        "hpa": ["synced", "writes", "hpa_cpu", "kcm", "hpa_rss", "kcm_rss", "adapter_cpu", "adapter_rss",
                "apiserver", "prometheus", "etcd", "queries", "query_s", "load"],
    }
    for s, name in (("mesh", "meshscaler"), ("hpa", "HPA + prometheus-adapter")):
        print(f"\n{name}: {len(pooled[s])} windows of 15 s, median (min-max)")
        for k in keys[s]:
            print(f"  {k:12} {fmt([w.get(k) for w in pooled[s]])}")
        done = [x for x in lat[s] if x is not None]
        print(f"  latency      {fmt(done, ' s')} from {len(done)} samples; "
              f"{len(lat[s]) - len(done)} did not scale within the timeout")


if __name__ == "__main__":
    main()
