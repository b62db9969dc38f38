#!/usr/bin/env python3
"""stamp.py CMD... - run CMD and print each line of its output prefixed with
the wall-clock time it arrived (seconds, microseconds). SIGTERM stops CMD too.
The latency test runs `kubectl get -w` under it to time replica changes."""
import signal
import subprocess
import sys
import time

child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, text=True, bufsize=1)


def stop(_sig, _frame):
    child.terminate()
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
for line in child.stdout:
    print("%.6f %s" % (time.time(), line.rstrip("\n")), flush=True)
child.wait()
