#!/usr/bin/env python3
"""chart.py: the lab's SVG chart, with no third-party modules.

Three panels on one time axis (seconds since the load started):
  1. arm (a) (blind-vs-aware: the HPA; retry-storm: meshscaler without the guard):
     offered load (the arrivals the client sent, from its own counter), admitted
     (successes/s) and errors/s;
  2. arm (b) (meshscaler; with the guard): the same;
  3. replicas of both arms (solid: spec.replicas; dotted: Ready);
  4. edge-flows only: the balancer's flow table, both arms, in % of its flows, with the
     guardrail's ceiling.
The arms, their titles and the headline come from the run's params.
The peak's ramp and hold are shaded in every panel. The title carries the figures.

  chart.py SERIES.json SUMMARY.json OUT.svg    redraw from a run's files
"""
import json
import sys
from xml.sax.saxutils import escape

W = 1100
LEFT, RIGHT = 80, 215
PANELS = [(105, 285), (345, 525), (580, 745), (805, 945)]  # (top, bottom) of each plot area

COLORS = {"offered": "#7f7f7f", "admitted": "#2ca02c", "errors": "#d62728"}
ARM_COLORS = ("#ff7f0e", "#1f77b4")  # arm (a), arm (b)


def nice_max(v):
    if v <= 0:
        return 1
    for m in (1, 2, 2.5, 5, 10):
        step = m * 10 ** (len(str(int(v))) - 1)
        if step >= v:
            return step
    return v


def ticks(vmax, n=5):
    step = vmax / n
    return [i * step for i in range(n + 1)]


class Svg:
    def __init__(self):
        self.parts = []

    def add(self, s):
        self.parts.append(s)

    def text(self, x, y, s, size=12, anchor="start", color="#222", weight="normal", rotate=0):
        rot = ' transform="rotate(%d %.1f %.1f)"' % (rotate, x, y) if rotate else ""
        self.add('<text x="%.1f" y="%.1f" font-size="%d" text-anchor="%s" fill="%s" font-weight="%s"%s>%s</text>'
                 % (x, y, size, anchor, color, weight, rot, escape(s)))

    def line(self, x1, y1, x2, y2, color="#ccc", width=1, dash=None):
        d = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add('<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="%s"%s/>'
                 % (x1, y1, x2, y2, color, width, d))

    def path(self, pts, color, width=1.8, dash=None):
        if len(pts) < 2:
            return
        d = " ".join(("M" if i == 0 else "L") + "%.1f,%.1f" % p for i, p in enumerate(pts))
        da = ' stroke-dasharray="%s"' % dash if dash else ""
        self.add('<path d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s/>'
                 % (d, color, width, da))

    def rect(self, x, y, w, h, fill, opacity=1.0):
        self.add('<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%s"/>'
                 % (x, y, w, h, fill, opacity))

    def render(self, H):
        return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
                'font-family="DejaVu Sans, Helvetica, Arial, sans-serif">\n' % (W, H, W, H)
                + '<rect width="100%" height="100%" fill="white"/>\n' + "\n".join(self.parts) + "\n</svg>\n")


def segments(points):
    """Split a [(x, y-or-None)] list at the gaps."""
    seg, out = [], []
    for x, y in points:
        if y is None:
            if seg:
                out.append(seg)
            seg = []
        else:
            seg.append((x, y))
    if seg:
        out.append(seg)
    return out


def write_svg(path, summary, series, replicas, p, occupancy=None):
    duration = p["duration_s"]
    peak0 = p["base_s"]
    hold0, hold1 = peak0 + p["ramp_s"], peak0 + p["ramp_s"] + p["hold_s"]
    down1 = hold1 + p["ramp_s"]
    svg = Svg()
    x0, x1 = LEFT, W - RIGHT

    def X(t):
        return x0 + (x1 - x0) * max(0.0, min(t, duration)) / duration

    rate_max = nice_max(max([p["peak_rate"]] + [r[k] for arm in series.values() for r in arm
                                                for k in ("offered", "admitted", "errors") if r[k] is not None]) * 1.05)
    rep_max = max([p["max_replicas"]] + [r["replicas"] for arm in replicas.values() for r in arm])
    rep_max = int(rep_max) + 1

    figs = summary["arms"]
    arms = list(p["arm_titles"])
    color = {arm: ARM_COLORS[i] for i, arm in enumerate(arms)}
    svg.text(W / 2, 24, p["headline"] % (p["base_rate"], p["peak_rate"]), size=16, anchor="middle",
             weight="bold")
    svg.text(W / 2, 46, "each pod's sidecar admits %d in flight (%d requests/s); %d pods at the start; new pods ready "
             "after a %d s start-up delay; retries %s; %s run"
             % (p["sidecar_maxconn"], p["pod_admits_per_s"], p["start_replicas"], p["startup_delay_s"],
                p["retry"], p["mode"]),
             size=12, anchor="middle", color="#555")

    def fig_line(arm):
        f = figs[arm]
        def v(x, unit=""):
            return "never" if x is None else "%g%s" % (round(x, 1), unit)
        return ("errors at peak %s, p99 %s ms, peak %d replicas, first scale %s, errors <1%% after %s"
                % ("n/a" if f["errors_share_at_peak"] is None else "%.0f%%" % (100 * f["errors_share_at_peak"]),
                   v(f["p99_ms"]), f["peak_replicas"], v(f["time_to_first_scale_s"], " s"),
                   v(f["time_to_recover_s"], " s")))

    titles = [(arm, p["arm_titles"][arm]) for arm in arms]

    panels = PANELS if occupancy and any(occupancy.values()) else PANELS[:3]
    for i, (top, bottom) in enumerate(panels):
        # peak shading: ramp light, hold darker
        svg.rect(X(peak0), top, X(down1) - X(peak0), bottom - top, "#f2c94c", 0.12)
        svg.rect(X(hold0), top, X(hold1) - X(hold0), bottom - top, "#f2c94c", 0.18)
        vmax = rate_max if i < 2 else rep_max if i == 2 else 100
        tk = (ticks(vmax) if i < 2 else list(range(0, rep_max + 1, 2 if rep_max > 8 else 1)) if i == 2
              else [0, 25, 50, 70, 100])
        for v in tk:
            y = bottom - (bottom - top) * v / vmax
            svg.line(x0, y, x1, y, "#e6e6e6")
            svg.text(x0 - 6, y + 4, "%g" % v, size=11, anchor="end", color="#555")
        svg.line(x0, bottom, x1, bottom, "#888")
        svg.line(x0, top, x0, bottom, "#888")
        step = 10 if duration <= 120 else 30
        for t in range(0, int(duration) + 1, step):
            svg.line(X(t), bottom, X(t), bottom + 4, "#888")
            svg.text(X(t), bottom + 16, "%d" % t, size=11, anchor="middle", color="#555")
        svg.line(X(peak0), top, X(peak0), bottom, "#b8860b", 1, "4,3")

        def Y(v, top=top, bottom=bottom, vmax=vmax):
            return bottom - (bottom - top) * min(v, vmax) / vmax

        if i < 2:
            arm, title = titles[i]
            svg.text(x0, top - 22, title, size=13, weight="bold", color=color[arm])
            svg.text(x0, top - 7, fig_line(arm), size=11, color="#444")
            svg.text(28, (top + bottom) / 2, "requests/s", size=11, anchor="middle", color="#555", rotate=-90)
            rows = series[arm]
            for key, width, dash in (("offered", 1.6, "6,4"), ("admitted", 2.0, None), ("errors", 2.0, None)):
                for seg in segments([(r["t"], r[key]) for r in rows]):
                    svg.path([(X(t), Y(v)) for t, v in seg], COLORS[key], width, dash)
            ly = top + 14
            for key, label in (("offered", "offered (arrivals sent)"), ("admitted", "admitted (successes/s)"), ("errors", "errors/s")):
                svg.line(x1 + 12, ly - 4, x1 + 36, ly - 4, COLORS[key], 2.5, "6,4" if key == "offered" else None)
                svg.text(x1 + 42, ly, label, size=11)
                ly += 18
        elif i == 3:
            limit = 100 * p["lb_max_utilization"]
            svg.text(x0, top - 10, "the balancer's flow table, %% of its %d flows (dashed: the guardrail's %g%%)"
                     % (p["lb_flows"], limit), size=13, weight="bold")
            svg.text(28, (top + bottom) / 2, "% of flows", size=11, anchor="middle", color="#555", rotate=-90)
            svg.line(x0, Y(limit), x1, Y(limit), "#555", 1.2, "5,4")
            for arm in arms:
                for seg in segments([(r["t"], 100 * r["occupancy"]) for r in occupancy.get(arm, [])]):
                    svg.path([(X(t), Y(v)) for t, v in seg], color[arm], 2.2)
        else:
            svg.text(x0, top - 10, "replicas (solid: desired, spec.replicas; dotted: Ready)", size=13,
                     weight="bold")
            svg.text(28, (top + bottom) / 2, "replicas", size=11, anchor="middle", color="#555", rotate=-90)
            for arm in arms:
                rows = replicas[arm]
                for key, dash in (("replicas", None), ("ready", "2,3")):
                    pts = []
                    prev = None
                    for r in rows:
                        if prev is not None:
                            pts.append((X(r["t"]), Y(prev)))
                        pts.append((X(r["t"]), Y(r[key])))
                        prev = r[key]
                    if prev is not None:
                        pts.append((X(duration), Y(prev)))
                    svg.path(pts, color[arm], 2.2 if key == "replicas" else 1.6, dash)
            ly = top + 14
            for arm in arms:
                label = p["arm_labels"][arm]
                svg.line(x1 + 12, ly - 4, x1 + 36, ly - 4, color[arm], 2.5)
                svg.text(x1 + 42, ly, label, size=11)
                ly += 18
    bottom = panels[-1][1]
    svg.text((x0 + x1) / 2, bottom + 36, "seconds since the load started (shaded: the peak; dashed line: "
             "its start)", size=12, anchor="middle", color="#444")
    with open(path, "w") as f:
        f.write(svg.render(bottom + 75))


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        s = json.load(f)
    with open(sys.argv[2]) as f:
        summary = json.load(f)
    p = summary["params"]
    write_svg(sys.argv[3], summary, s["rates"], s["replicas"], p, s.get("occupancy"))


if __name__ == "__main__":
    main()
