#!/usr/bin/env python3
"""follow.py --log FILE [--show KIND] [--prefix P] -- CMD...

Runs CMD (a `kubectl ... --watch` or `kubectl logs -f`) and appends each line it
prints to FILE with the wall-clock time in front ("1733025600.123 LINE"), so a
lab script gets time series from watches without polling. With --show, lines are
also printed to the terminal, formatted:

  raw         the line as it is
  meshscaler  the controller's JSON log: only decisions ("decided", "scaled"),
              as "HH:MM:SS ns/name current -> desired REASON: message"
  hpa         "NAME|CPU%|DESIRED" lines (a jsonpath watch of an HPA), as
              "HH:MM:SS NAME: app CPU N% of request -> desired N"

SIGTERM or SIGINT stops CMD and exits 0. Only standard modules.
"""
import argparse
import json
import signal
import subprocess
import sys
import time


def meshscaler_line(line):
    try:
        rec = json.loads(line)
    except ValueError:
        return None
    msg = rec.get("msg")
    if msg not in ("decided", "scaled"):
        return None
    when = str(rec.get("ts", ""))[11:19]
    text = str(rec.get("message", ""))
    if len(text) > 150:
        text = text[:147] + "..."
    if msg == "scaled":
        return "%s %s SCALED %s -> %s (%s): %s" % (when, rec.get("object"), rec.get("from"), rec.get("to"),
                                                  rec.get("reason"), text)
    return "%s %s %s -> %s %s: %s" % (when, rec.get("object"), rec.get("current"), rec.get("desired"),
                                      rec.get("reason"), text)


def hpa_line(line):
    parts = line.split("|")
    if len(parts) < 3:
        return None
    return "%s %s: app CPU %s%% of request -> desired %s" % (time.strftime("%H:%M:%S", time.gmtime()), parts[0],
                                                          parts[1] if parts[1] else "?", parts[2])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--log", required=True)
    ap.add_argument("--show", choices=["raw", "meshscaler", "hpa"])
    ap.add_argument("--prefix", default="")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.error("no command")
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def stop(signum, frame):
        child.terminate()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.kill()
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    with open(a.log, "a", buffering=1) as log:
        for line in child.stdout:
            line = line.rstrip("\n")
            log.write("%.3f %s\n" % (time.time(), line))
            shown = None
            if a.show == "raw":
                shown = line
            elif a.show == "meshscaler":
                shown = meshscaler_line(line)
            elif a.show == "hpa":
                shown = hpa_line(line)
            if shown is not None:
                print(a.prefix + shown, flush=True)
    child.wait()


if __name__ == "__main__":
    main()
