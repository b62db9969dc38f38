#!/usr/bin/env python3
"""helper.py - small servers the Prometheus integration tests need besides
Prometheus and HAProxy themselves. Everything binds 127.0.0.1 only.

  helper.py backend PORT            HTTP app behind HAProxy: GET /hold/S answers
                                    after S seconds (holds a session in flight)
  helper.py exporter PORT DIR       serves DIR/NAME.prom at /NAME as exposition
                                    text; {{counter:R}} becomes R * seconds since
                                    start, so counters grow at R per second;
                                    {{ts:-S}} a sample timestamp S seconds ago
  helper.py misbehave PORT          a broken "Prometheus" for failure tests:
                                    /garbage /slow /truncated /cut /plain404
                                    /html500 /unauthorized /delay, each +
                                    /api/v1/query
  helper.py delay PORT UPSTREAM S   a fault proxy in front of Prometheus at
                                    127.0.0.1:UPSTREAM: a query whose text holds
                                    "# slow" is forwarded after S seconds, any
                                    other at once (one tenant's slow queries,
                                    without burning the host's CPU)
  helper.py load HOST PORT N HOLD   open N connections, send GET /hold/HOLD on
                                    each, keep them until the answers arrive
                                    (a bounded load generator: N and HOLD cap it)
"""
import http.client
import os
import re
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

START = time.time()


class Quiet(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body, ctype="text/plain; charset=utf-8", length=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data) if length is None else length))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()


class Backend(Quiet):
    def do_GET(self):
        m = re.match(r"^/hold/([0-9.]+)$", self.path)
        if m:
            time.sleep(min(float(m.group(1)), 120.0))
        self.reply(200, "ok\n")


def exporter_handler(directory):
    class Exporter(Quiet):
        def do_GET(self):
            name = os.path.basename(self.path.strip("/")) or "index"
            path = os.path.join(directory, name + ".prom")
            if not os.path.isfile(path):
                self.reply(404, "no such exporter file\n")
                return
            with open(path) as f:
                text = f.read()
            elapsed = time.time() - START
            text = re.sub(r"\{\{counter:([0-9.eE+-]+)\}\}",
                          lambda m: repr(float(m.group(1)) * elapsed), text)
            now_ms = int(time.time() * 1000)
            text = re.sub(r"\{\{ts:([0-9-]+)\}\}",
                          lambda m: str(now_ms + int(m.group(1)) * 1000), text)
            self.reply(200, text, "text/plain; version=0.0.4; charset=utf-8")
    return Exporter


class Misbehave(Quiet):
    def handle_any(self):
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            self.rfile.read(length)
        kind = self.path.strip("/").split("/")[0]
        if kind == "garbage":
            self.reply(200, b"\x00\xffthis is not json at all\x1b[0m", "application/json")
        elif kind == "slow":
            time.sleep(30)
            self.reply(200, '{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}',
                       "application/json")
        elif kind == "delay":
            # Answers after one second: for measuring how many queries run at once.
            time.sleep(1)
            self.reply(200, '{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}',
                       "application/json")
        elif kind == "truncated":
            # A complete HTTP message whose JSON stops half-way.
            self.reply(200, '{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"va',
                       "application/json")
        elif kind == "cut":
            # Promises more bytes than it sends, then hangs up.
            body = b'{"status":"success","data":{"resultType":"vector","result":['
            self.reply(200, body, "application/json", length=len(body) + 500)
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        elif kind == "plain404":
            self.reply(404, "404 page not found\n")
        elif kind == "html500":
            self.reply(500, "<html><body>Internal Server Error</body></html>", "text/html")
        elif kind == "unauthorized":
            self.reply(401, "Unauthorized\n")
        else:
            self.reply(404, "404 page not found\n")

    do_GET = handle_any
    do_POST = handle_any


def delay_handler(upstream, seconds):
    class Delay(Quiet):
        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            form = urllib.parse.parse_qs(body.decode("utf-8", "replace"))
            if any("# slow" in q for q in form.get("query", [])):
                time.sleep(seconds)
            conn = http.client.HTTPConnection("127.0.0.1", upstream, timeout=120)
            try:
                headers = {"Content-Type": self.headers.get("Content-Type",
                                                            "application/x-www-form-urlencoded")}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                self.reply(resp.status, data, resp.getheader("Content-Type", "application/json"))
            except OSError:
                pass  # the client gave up on it: nothing to answer
            finally:
                conn.close()

        do_GET = handle_any
        do_POST = handle_any
    return Delay


def serve(port, handler):
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.serve_forever()


def load(host, port, n, hold):
    socks = []
    for _ in range(n):
        s = socket.create_connection((host, port), timeout=hold + 30)
        s.sendall(("GET /hold/%g HTTP/1.1\r\nHost: load\r\nConnection: close\r\n\r\n" % hold).encode())
        socks.append(s)
    deadline = time.time() + hold + 30
    for s in socks:
        s.settimeout(max(1.0, deadline - time.time()))
        try:
            while s.recv(4096):
                pass
        except OSError:
            pass
        s.close()


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    mode = argv[1]
    if mode == "load":
        load(argv[2], int(argv[3]), int(argv[4]), float(argv[5]))
        return
    port = int(argv[2])
    if mode == "backend":
        serve(port, Backend)
    elif mode == "exporter":
        serve(port, exporter_handler(argv[3]))
    elif mode == "misbehave":
        serve(port, Misbehave)
    elif mode == "delay":
        serve(port, delay_handler(int(argv[3]), float(argv[4])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
