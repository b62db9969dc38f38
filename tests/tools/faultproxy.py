#!/usr/bin/env python3
"""faultproxy.py - a TCP proxy for tests that misbehaves on command.

It sits between a client (the controller, a test program) and a server (the
kube-apiserver over TLS, Prometheus over plain HTTP/1.1). It forwards bytes
without looking at them, so TLS passes through untouched: the client still
verifies the server's certificate for the name in its URL (use 127.0.0.1 or
localhost, which the e2e/local certificates carry).

  faultproxy.py --listen 127.0.0.1:PORT --upstream HOST:PORT \\
                --control 127.0.0.1:CPORT [--log FILE]

PORT or CPORT 0 picks a free port. The first line on stdout is
"LISTEN=<port> CONTROL=<port>" (flushed), so a test can read the ports.

Control API, plain HTTP on the control port (curl -s 'http://127.0.0.1:CPORT/...'):

  /mode?set=pass                  forward normally
  /mode?set=latency&ms=N          delay every chunk, both directions, by N ms
  /mode?set=blackhole             forward nothing either way and close nothing:
                                  open connections freeze (no byte lost: pass
                                  resumes them), new ones are accepted and held
                                  (the upstream is not even dialled)
  /mode?set=reset                 RST (SO_LINGER 0) every open connection and
                                  every new one
  /mode?set=status&code=C[&retry_after=S]
                                  plain HTTP/1.1 upstreams only: connections
                                  accepted from now on get status C (400..599)
                                  with a small JSON body (and Retry-After: S)
                                  for each request; the upstream is not contacted.
                                  Open connections keep forwarding; a status
                                  connection hands its next request to the
                                  upstream once the mode is no longer status
  /mode?set=trickle&bytes_per_s=N forward server->client bytes at N bytes/s
  /mode                           the current mode (JSON)
  /stats                          JSON: mode, open and accepted connections,
                                  bytes forwarded each way, resets, status answers

A mode applies to open connections too (except status, see above). Answers
are JSON; a bad request gets 400 and changes nothing.

Limits: a blackholed connection is frozen in user space, so the proxy's
kernel still ACKs TCP keepalive probes; only an application-level idle
timeout notices it (which is what the tests need). In pass mode, when
either side closes, both are closed (no half-close).

Python 3.11 standard library only. SIGTERM or SIGINT: exit 0.
"""
import argparse
import asyncio
import itertools
import json
import signal
import socket
import struct
import sys
import time
from urllib.parse import parse_qs, urlsplit

CHUNK = 65536
QUEUE_CHUNKS = 16  # per direction: a bounded delay line gives back-pressure
MAX_HEADER = 65536
MAX_BODY = 16 * 1024 * 1024
REASONS = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Service Unavailable"}


def host_port(text):
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: expected HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


class Log:
    def __init__(self, path):
        self.f = open(path, "a", buffering=1) if path else None

    def __call__(self, msg, **kv):
        if self.f is None:
            return
        fields = " ".join(f"{k}={v}" for k, v in kv.items())
        self.f.write(f"{time.strftime('%H:%M:%S')}.{int(time.time() * 1000) % 1000:03d} {msg} {fields}\n")


def set_linger0(writer):
    sock = writer.get_extra_info("socket") if writer is not None else None
    if sock is not None:
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass


class Proxy:
    def __init__(self, upstream, log):
        self.upstream = upstream
        self.log = log
        self.mode = {"name": "pass"}
        self.flowing = asyncio.Event()  # cleared while blackholed
        self.flowing.set()
        self.conns = set()
        self.ids = itertools.count(1)
        self.accepted = 0
        self.bytes_up = 0  # client -> server, forwarded
        self.bytes_down = 0  # server -> client, forwarded
        self.resets = 0
        self.status_answers = 0

    # ---- modes ----

    def set_mode(self, q):
        """Apply a mode from query parameters; ValueError names the fault."""

        def num(name, lo, hi, required=True):
            if name not in q:
                if required:
                    raise ValueError(f"{name} is required")
                return None
            try:
                v = int(q[name])
            except ValueError:
                raise ValueError(f"{name}: not an integer") from None
            if not lo <= v <= hi:
                raise ValueError(f"{name}: must be in [{lo}, {hi}]")
            return v

        name = q.get("set", "")
        if name in ("pass", "blackhole", "reset"):
            mode = {"name": name}
        elif name == "latency":
            mode = {"name": name, "ms": num("ms", 0, 600000)}
        elif name == "status":
            mode = {"name": name, "code": num("code", 400, 599)}
            ra = num("retry_after", 0, 86400, required=False)
            if ra is not None:
                mode["retry_after"] = ra
        elif name == "trickle":
            mode = {"name": name, "bytes_per_s": num("bytes_per_s", 1, 1 << 30)}
        else:
            raise ValueError("set: one of pass, latency, blackhole, reset, status, trickle")
        self.mode = mode
        self.log("mode", **mode)
        if name == "blackhole":
            self.flowing.clear()
        else:
            self.flowing.set()
        if name == "reset":
            for c in list(self.conns):
                c.reset()
        return mode

    def latency(self):
        return self.mode["ms"] / 1000.0 if self.mode["name"] == "latency" else 0.0

    def stats(self):
        return {
            "mode": self.mode,
            "open": len(self.conns),
            "accepted": self.accepted,
            "bytes_client_to_server": self.bytes_up,
            "bytes_server_to_client": self.bytes_down,
            "resets": self.resets,
            "status_answers": self.status_answers,
        }

    # ---- connections ----

    async def on_client(self, reader, writer):
        self.accepted += 1
        conn = Conn(self, next(self.ids), reader, writer)
        self.conns.add(conn)
        try:
            await conn.run()
        except asyncio.CancelledError:
            pass
        except Exception as e:  # never let one connection take the proxy down
            self.log("error", conn=conn.id, error=repr(e))
        finally:
            self.conns.discard(conn)
            conn.close()

    def close_all(self):
        for c in list(self.conns):
            c.close()


class Conn:
    def __init__(self, proxy, cid, creader, cwriter):
        self.p = proxy
        self.id = cid
        self.cr, self.cw = creader, cwriter
        self.ur = self.uw = None
        self.task = asyncio.current_task()
        self.closed = False
        peer = cwriter.get_extra_info("peername")
        self.p.log("accept", conn=cid, peer=f"{peer[0]}:{peer[1]}" if peer else "?")

    def reset(self):
        """RST both sides now."""
        if self.closed:
            return
        self.p.resets += 1
        self.p.log("reset", conn=self.id)
        for w in (self.cw, self.uw):
            if w is not None:
                set_linger0(w)
                w.transport.abort()
        self.closed = True
        if self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()

    def close(self):
        if self.closed:
            return
        self.closed = True
        self.p.log("close", conn=self.id)
        for w in (self.cw, self.uw):
            if w is not None:
                try:
                    w.close()
                except Exception:
                    pass

    async def run(self):
        initial = b""
        if self.p.mode["name"] == "status":
            initial = await self.serve_status()
            if initial is None:
                return
        await self.p.flowing.wait()
        if self.p.mode["name"] == "reset":
            self.reset()
            return
        try:
            self.ur, self.uw = await asyncio.open_connection(*self.p.upstream)
        except OSError as e:
            self.p.log("upstream unreachable", conn=self.id, error=repr(e))
            return
        if initial:
            self.uw.write(initial)
            self.p.bytes_up += len(initial)
        up = asyncio.create_task(self.pump(self.cr, self.uw, up=True))
        down = asyncio.create_task(self.pump(self.ur, self.cw, up=False))
        try:
            await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in (up, down):
                t.cancel()

    async def pump(self, reader, writer, up):
        """Forward one direction until EOF or an error; returns then."""
        q = asyncio.Queue(QUEUE_CHUNKS)

        async def read_side():
            while True:
                await self.p.flowing.wait()
                try:
                    data = await reader.read(CHUNK)
                except (OSError, asyncio.IncompleteReadError):
                    data = b""
                await q.put((time.monotonic() + self.p.latency(), data))
                if not data:
                    return

        reading = asyncio.create_task(read_side())
        try:
            while True:
                due, data = await q.get()
                delay = due - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                await self.p.flowing.wait()  # blackhole: hold even the EOF
                if not data:
                    return
                await self.send(writer, data, up)
        except (OSError, asyncio.IncompleteReadError):
            return
        finally:
            reading.cancel()

    async def send(self, writer, data, up):
        while data:
            mode = self.p.mode
            if up or mode["name"] != "trickle":
                piece = data
            else:
                # About ten writes a second at the trickle rate.
                piece = data[: max(1, mode["bytes_per_s"] // 10)]
            await self.p.flowing.wait()
            writer.write(piece)
            await writer.drain()
            if up:
                self.p.bytes_up += len(piece)
            else:
                self.p.bytes_down += len(piece)
            data = data[len(piece):]
            if not up and mode["name"] == "trickle":
                await asyncio.sleep(len(piece) / mode["bytes_per_s"])

    # ---- status mode ----

    async def serve_status(self):
        """Answer requests with the configured status while the mode is
        status. Returns the raw bytes of a request still to be forwarded
        (the mode changed), or None when the connection is done."""
        while True:
            try:
                raw, head = await read_request(self.cr)
            except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
                return None
            if raw is None:
                return None
            mode = self.p.mode
            if mode["name"] != "status":
                return raw
            await self.answer(mode, head)
            if b"connection: close" in head.lower():
                return None

    async def answer(self, mode, head):
        code = mode["code"]
        reason = REASONS.get(code, "Error")
        body = json.dumps({
            "status": "error", "errorType": "faultproxy", "code": code,
            "error": f"faultproxy: injected {code} {reason}",
        }).encode() + b"\n"
        lines = [f"HTTP/1.1 {code} {reason}", "Content-Type: application/json",
                 f"Content-Length: {len(body)}"]
        if "retry_after" in mode:
            lines.append(f"Retry-After: {mode['retry_after']}")
        out = ("\r\n".join(lines) + "\r\n\r\n").encode()
        if not head.startswith(b"HEAD "):
            out += body
        self.cw.write(out)
        await self.cw.drain()
        self.p.status_answers += 1
        self.p.log("status", conn=self.id, code=code)


async def read_request(reader):
    """One HTTP/1.1 request, raw: (bytes, head) or (None, None) at EOF."""
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except asyncio.IncompleteReadError as e:
        if e.partial.strip():
            raise
        return None, None
    if len(head) > MAX_HEADER:
        raise ValueError("request head too long")
    raw = [head]
    length, chunked = 0, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        while True:
            size_line = await reader.readuntil(b"\r\n")
            raw.append(size_line)
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, then the empty line
                    t = await reader.readuntil(b"\r\n")
                    raw.append(t)
                    if t == b"\r\n":
                        break
                break
            if size > MAX_BODY:
                raise ValueError("chunk too large")
            raw.append(await reader.readexactly(size + 2))
    elif length:
        if not 0 <= length <= MAX_BODY:
            raise ValueError("body too large")
        raw.append(await reader.readexactly(length))
    return b"".join(raw), head


# ---- the control API ----


async def control(proxy, reader, writer):
    try:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
        parts = head.split(b"\r\n", 1)[0].decode("latin-1").split()
        if len(parts) < 2:
            code, doc = 400, {"error": "bad request line"}
        else:
            url = urlsplit(parts[1])
            q = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if url.path == "/mode" and "set" in q:
                try:
                    code, doc = 200, {"mode": proxy.set_mode(q)}
                except ValueError as e:
                    code, doc = 400, {"error": str(e)}
            elif url.path == "/mode":
                code, doc = 200, {"mode": proxy.mode}
            elif url.path == "/stats":
                code, doc = 200, proxy.stats()
            else:
                code, doc = 404, {"error": "paths: /mode?set=..., /mode, /stats"}
        body = json.dumps(doc).encode() + b"\n"
        writer.write(f"HTTP/1.1 {code} {'OK' if code == 200 else 'Error'}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
                     f"Connection: close\r\n\r\n".encode() + body)
        await writer.drain()
    except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def main():
    ap = argparse.ArgumentParser(description="A fault-injecting TCP proxy for tests.")
    ap.add_argument("--listen", type=host_port, required=True, help="HOST:PORT (0: any free port)")
    ap.add_argument("--upstream", type=host_port, required=True, help="HOST:PORT of the server")
    ap.add_argument("--control", type=host_port, required=True, help="HOST:PORT of the control API")
    ap.add_argument("--log", help="append one line per connection event and mode change here")
    args = ap.parse_args()

    log = Log(args.log)
    proxy = Proxy(args.upstream, log)
    listen = await asyncio.start_server(proxy.on_client, *args.listen)
    ctl = await asyncio.start_server(lambda r, w: control(proxy, r, w), *args.control)
    lport = listen.sockets[0].getsockname()[1]
    cport = ctl.sockets[0].getsockname()[1]
    print(f"LISTEN={lport} CONTROL={cport}", flush=True)
    log("started", listen=lport, control=cport, upstream=f"{args.upstream[0]}:{args.upstream[1]}")

    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    log("stopping")
    listen.close()
    ctl.close()
    proxy.close_all()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
