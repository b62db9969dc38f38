#!/usr/bin/env python3
"""Evaluate every query of the chart's Grafana dashboard against a real Prometheus.

    dashboard_queries.py PROMETHEUS_URL JOB [DASHBOARD_JSON]

Template variables become: $job -> JOB, $namespace and $name -> .*, $__rate_interval
-> 1m. Prints one line per panel: how many series its queries return, and the values
of single-series panels. Exit 0; the caller judges which panels must have data.
Grafana itself cannot run offline here, so this is how the tests see what the
dashboard would show.
"""
import json
import os
import sys
import urllib.parse
import urllib.request


def query(url, expr):
    data = urllib.parse.urlencode({"query": expr}).encode()
    with urllib.request.urlopen(url.rstrip("/") + "/api/v1/query", data, timeout=10) as r:
        body = json.load(r)
    return body["data"]["result"] if body.get("status") == "success" else []


def main():
    url, job = sys.argv[1], sys.argv[2]
    path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(
        os.path.dirname(__file__), "..", "..", "charts", "meshscaler", "dashboards", "meshscaler.json")
    with open(path) as f:
        dash = json.load(f)
    subst = {"$job": job, "$namespace": ".*", "$name": ".*", "$__rate_interval": "1m"}
    for panel in dash.get("panels", []):
        exprs = [t["expr"] for t in panel.get("targets", []) if t.get("expr")]
        if not exprs:
            continue
        series, shown = 0, []
        for e in exprs:
            for k, v in subst.items():
                e = e.replace(k, v)
            try:
                res = query(url, e)
            except Exception as err:  # noqa: BLE001 - report, do not stop
                print(f"{panel.get('title')}\tERROR {err}")
                res = []
            series += len(res)
            for r in res[:3]:
                labels = ",".join(f"{k}={v}" for k, v in sorted(r["metric"].items()) if k not in ("job", "instance", "pod", "node"))
                shown.append(f"{labels or '-'}:{float(r['value'][1]):g}")
        print(f"{panel.get('title')}\t{series}\t{'; '.join(shown)[:160]}")


if __name__ == "__main__":
    main()
