#!/usr/bin/env python3
"""masschange_table.py - a Markdown table of one `bench/controller.sh N W masschange`
output, one row per period, as docs/performance.md shows it (for an "after" run too).

    bench/results/masschange_table.py FILE
"""
import re
import sys


def field(pattern, line, default="-"):
    m = re.search(pattern, line)
    return m.group(1) if m else default


def main():
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    print("| period (s after start) | decisions (rounds) | Prometheus queries (evaluation) | sent by meshscaler "
          "| controller CPU | RSS | scale writes (landed so far) | longest decision to write "
          "| status patches | Events POSTed (all clients) | status writes queued | Events dropped | load (1 min) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for i, line in enumerate(lines):
        m = re.match(r"  period (\d+) \(([\d.]+)-([\d.]+) s\)", line)
        if not m:
            continue
        rest = lines[i + 1:i + 6]
        ops = next((x for x in rest if "by operation" in x), "")
        api = next((x for x in rest if "API server" in x), "")
        cp = next((x for x in rest if "control plane CPU" in x), "")
        def f(pattern, where=line, default="-"):
            return field(pattern, where, default)
        span = "%s (%.0f-%.0f)" % (m.group(1), float(m.group(2)), float(m.group(3)))
        cells = [
            span,
            "%s (%s)" % (f(r"(\d+) decisions"), f(r"in (\d+) rounds")),
            "%s (%s s)" % (f(r"Prometheus queries (\d+)"), f(r"\(([\d.]+) s of evaluation")),
            f(r"meshscaler sent (\d+)"),
            f(r"controller CPU ([\d.]+) s") + " s",
            f(r"RSS (\d+) MiB") + " MiB",
            "%s (%s)" % (f(r"scale writes (\d+)"), f(r"landed so far (\d+)")),
            # (runs before the after_decision field have no such figure: "-")
            (lambda v: v if v == "-" else v + " s")(f(r"decision to write in this period ([\d.]+|-) s")),
            f(r"patch_status (\d+)", ops, "0"),
            f(r"events POST (\d+)", api),
            f(r"status writes queued (\d+)"),
            f(r"Events dropped (\d+)"),
            f(r"load ([\d.]+)", cp),
        ]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
