#!/usr/bin/env python3
"""test_faultproxy.py - faultproxy.py against a throwaway local HTTP server:
each mode does what it says. Run with plain `python3`; prints one ok/FAIL
line per check, then "N passed, N failed"; exit status 1 on any failure.
Takes about 20 s.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from http.client import HTTPConnection
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
PROXY = os.path.join(HERE, "faultproxy.py")
BIG = 6000
passed = failed = 0
hits = 0  # requests the server answered
hits_lock = threading.Lock()


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   - {what}")
    else:
        failed += 1
        print(f"FAIL - {what}{': ' + str(detail) if detail else ''}")
    return cond


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def do_GET(self):
        global hits
        with hits_lock:
            hits += 1
        if self.path == "/stream":
            # One numbered line every 50 ms for up to 20 s, then close.
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Connection", "close")
            self.end_headers()
            try:
                for i in range(400):
                    self.wfile.write(f"{i}\n".encode())
                    self.wfile.flush()
                    time.sleep(0.05)
            except OSError:
                pass
            self.close_connection = True
            return
        body = b"x" * BIG if self.path == "/big" else b"hello\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        if self.path == "/close":
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.write(body)


class Proxy:
    def __init__(self, upstream_port):
        self.p = subprocess.Popen(
            [sys.executable, PROXY, "--listen", "127.0.0.1:0", "--upstream", f"127.0.0.1:{upstream_port}",
             "--control", "127.0.0.1:0"], stdout=subprocess.PIPE, text=True)
        first = self.p.stdout.readline().split()
        kv = dict(f.split("=") for f in first)
        self.port, self.cport = int(kv["LISTEN"]), int(kv["CONTROL"])

    def ctl(self, path):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.cport}{path}", timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    def mode(self, query):
        status, doc = self.ctl(f"/mode?set={query}")
        assert status == 200, doc
        return doc

    def stats(self):
        return self.ctl("/stats")[1]

    def get(self, path, timeout=10):
        c = HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, dict(r.getheaders()), r.read()
        finally:
            c.close()

    def raw(self, path, timeout):
        """A socket with a GET sent on it."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        s.settimeout(timeout)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        return s


def recv_for(s, seconds):
    """Bytes received within seconds; b'' plus 'eof' or 'reset' when it ended."""
    end, out = time.time() + seconds, b""
    while time.time() < end:
        s.settimeout(max(0.01, end - time.time()))
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            return out, "reset"
        if not d:
            return out, "eof"
        out += d
    return out, "open"


def wait_for(cond, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def lines_contiguous(data):
    body = data.split(b"\r\n\r\n", 1)[-1]
    nums = [int(x) for x in body.split(b"\n")[:-1]]
    return nums == list(range(nums[0], nums[0] + len(nums))) if nums else False, nums


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    px = Proxy(server.server_address[1])
    try:
        run(px)
    finally:
        if px.p.poll() is None:
            px.p.kill()
        server.shutdown()
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def run(px):
    check(px.port > 0 and px.cport > 0, "first stdout line names both ports", f"{px.port} {px.cport}")

    # pass
    st, _, body = px.get("/")
    check(st == 200 and body == b"hello\n", "pass: a request goes through", f"{st} {body!r}")
    c = HTTPConnection("127.0.0.1", px.port, timeout=5)
    ok = True
    for _ in range(3):
        c.request("GET", "/")
        r = c.getresponse()
        ok = ok and r.status == 200 and r.read() == b"hello\n"
    c.close()
    check(ok, "pass: three requests on one keep-alive connection")
    s = px.stats()
    check(s["mode"]["name"] == "pass" and s["accepted"] >= 2 and s["bytes_client_to_server"] > 0 and
          s["bytes_server_to_client"] > 0, "stats: mode, connections accepted, bytes each way", s)
    check(wait_for(lambda: px.stats()["open"] == 0, 3), "pass: closed connections are closed on both sides",
          px.stats())

    # latency
    px.mode("latency&ms=300")
    t = time.time()
    st, _, _ = px.get("/")
    took = time.time() - t
    check(st == 200 and took >= 0.58, "latency 300 ms: request and answer are each delayed", f"{took:.2f} s")
    px.mode("pass")
    t = time.time()
    px.get("/")
    check(time.time() - t < 0.25, "pass again: no delay", f"{time.time() - t:.2f} s")

    # blackhole: an open stream freezes without loss, a new connection is held
    stream = px.raw("/stream", 5)
    before, how = recv_for(stream, 0.5)
    check(how == "open" and b"200 OK" in before, "a streaming answer flows before the blackhole", how)
    px.mode("blackhole")
    time.sleep(0.2)  # what was in flight when the mode changed
    recv_for(stream, 0.2)
    held = px.raw("/", 5)
    frozen, how = recv_for(stream, 1.5)
    check(frozen == b"" and how == "open", "blackhole: an open connection gets nothing and stays open",
          f"{len(frozen)} bytes, {how}")
    got, how = recv_for(held, 0.5)
    check(got == b"" and how == "open", "blackhole: a new connection is accepted, gets nothing, stays open",
          f"{got!r} {how}")
    hits_before = hits
    px.mode("pass")
    after, how = recv_for(stream, 0.5)
    ok, nums = lines_contiguous(before + after)
    check(ok and len(nums) > 20, "pass again: the frozen stream resumes, no byte lost",
          f"{len(nums)} lines, contiguous: {ok}")
    got, how = recv_for(held, 1)
    check(b"200 OK" in got and b"hello" in got, "pass again: the held connection is answered",
          f"{got[:40]!r} {how}")
    check(hits > hits_before, "the held request reached the server only after the blackhole", hits - hits_before)
    held.close()

    # reset
    px.mode("reset")
    _, how = recv_for(stream, 1)
    check(how == "reset", "reset: an open connection gets RST", how)
    stream.close()
    try:
        s2 = px.raw("/", 2)
        _, how = recv_for(s2, 1)
        s2.close()
    except ConnectionResetError:
        how = "reset"
    check(how == "reset", "reset: a new connection gets RST", how)
    check(px.stats()["resets"] >= 2, "stats count the resets", px.stats()["resets"])
    px.mode("pass")

    # status
    px.mode("status&code=503&retry_after=7")
    hits_before = hits
    c = HTTPConnection("127.0.0.1", px.port, timeout=5)
    c.request("GET", "/")
    r = c.getresponse()
    body = r.read()
    check(r.status == 503 and r.getheader("Retry-After") == "7" and json.loads(body)["code"] == 503,
          "status 503 retry_after=7: status, Retry-After and a JSON body", f"{r.status} {r.getheaders()} {body!r}")
    c.request("GET", "/")
    r = c.getresponse()
    r.read()
    check(r.status == 503, "status: every request on the connection is answered", r.status)
    check(hits == hits_before, "status: the upstream is not contacted", hits - hits_before)
    px.mode("status&code=429")
    st, headers, _ = px.get("/")
    check(st == 429 and "Retry-After" not in headers, "status 429 without retry_after: no Retry-After", f"{st} {headers}")
    px.mode("pass")
    c.request("GET", "/")
    r = c.getresponse()
    check(r.status == 200 and r.read() == b"hello\n", "pass again: the status connection's next request reaches the server",
          r.status)
    c.close()
    status, doc = px.ctl("/mode?set=status&code=42")
    check(status == 400 and px.ctl("/mode")[1]["mode"]["name"] == "pass", "a bad mode is refused and changes nothing",
          f"{status} {doc}")

    # trickle
    px.mode("trickle&bytes_per_s=2000")
    t = time.time()
    st, _, body = px.get("/big", timeout=20)
    took = time.time() - t
    check(st == 200 and len(body) == BIG and 2.5 <= took <= 8, f"trickle 2000 B/s: {BIG} bytes take about 3 s",
          f"{took:.2f} s, {len(body)} bytes")
    px.mode("pass")
    t = time.time()
    px.get("/big")
    check(time.time() - t < 0.5, "pass again: full speed", f"{time.time() - t:.2f} s")

    # either side closing closes both
    st, _, _ = px.get("/close")
    s3 = px.raw("/", 5)
    recv_for(s3, 0.3)
    s3.close()
    check(st == 200 and wait_for(lambda: px.stats()["open"] == 0, 3),
          "the server or the client closing closes both sides", px.stats())

    # an unreachable upstream closes the client's connection; the proxy lives on
    dead = socket.socket()
    dead.bind(("127.0.0.1", 0))
    dead_port = dead.getsockname()[1]
    dead.close()
    px2 = Proxy(dead_port)
    try:
        s4 = px2.raw("/", 3)
        _, how = recv_for(s4, 2)
        s4.close()
        check(how in ("eof", "reset") and px2.stats()["open"] == 0,
              "an unreachable upstream: the client's connection is closed, the proxy lives on", how)
        px2.p.send_signal(signal.SIGTERM)
        check(px2.p.wait(5) == 0, "SIGTERM: exit status 0")
    finally:
        if px2.p.poll() is None:
            px2.p.kill()
    px.p.send_signal(signal.SIGTERM)
    check(px.p.wait(5) == 0, "SIGTERM with connections behind it: exit status 0")


if __name__ == "__main__":
    sys.exit(main())
