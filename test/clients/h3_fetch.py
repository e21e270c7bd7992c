"""HTTP/3 fetch client on aioquic for the framework tests.

Reads a JSON plan on stdin, runs its requests against --host/--port on one
connection, prints one JSON result on stdout. Beyond test/clients/h3client.py
it can send a large request body generated while it is sent, and it reports
what the framework tests check: every response field line as decoded (order,
case and duplicates kept), the body's length and SHA-256 (its text up to a
cap), and when each piece of the body arrived.

Plan:
  {
    "timeout": 60,                # seconds for the whole plan
    "sequential": true,           # false: all requests at once
    "requests": [{
      "method": "POST", "path": "/upload",
      "headers": [["content-type", "application/octet-stream"]],
      "body_text": "...",         # or "body_b64": "...", or:
      "body_pattern": {"total": 104857600, "chunk_size": 65536},
      "content_length": true,     # add content-length for the body (default: none,
                                  # the body is framed by DATA frames and FIN alone)
      "body_keep": 1048576        # body bytes kept as text/base64 (default 1 MiB)
    }]
  }

body_pattern sends `total` bytes where byte i is i % 251 (test/frameworks/
pattern.ts), `chunk_size` at a time, never holding more than `max_buffered`
(default 4 MiB) bytes unacknowledged in aioquic's send buffer: the upload
goes as fast as QUIC flow control and the server let it, and costs the
client no memory.

Result, per request: status, headers ([[name, value], ...] without
pseudo-headers), body_text, body_b64 (up to body_keep), body_length,
body_sha256, chunks ([[ms since the request started, bytes], ...], the
first 2000), chunk_count, headers_ms, elapsed_ms, sent_bytes, upload_ms
(when the last body byte was handed to QUIC), reset_code,
stop_sending_code, error.
"""

import argparse
import asyncio
import base64
import hashlib
import json
import ssl
import sys
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StopSendingReceived, StreamReset

PATTERN_PERIOD = 251
MAX_CHUNK_RECORDS = 2000


def ms(since):
    return round((time.monotonic() - since) * 1000, 3)


class Exchange:
    def __init__(self, keep):
        self.started = time.monotonic()
        self.status = None
        self.headers = []
        self.headers_ms = None
        self.keep = keep
        self.kept = bytearray()
        self.length = 0
        self.sha = hashlib.sha256()
        self.chunks = []
        self.chunk_count = 0
        self.sent_bytes = 0
        self.upload_ms = None
        self.reset_code = None
        self.stop_sending_code = None
        self.error = None
        self.finished_ms = None
        self.done = asyncio.get_running_loop().create_future()

    def data(self, data):
        if not data:
            return
        self.chunk_count += 1
        if len(self.chunks) < MAX_CHUNK_RECORDS:
            self.chunks.append([ms(self.started), len(data)])
        self.length += len(data)
        self.sha.update(data)
        room = self.keep - len(self.kept)
        if room > 0:
            self.kept.extend(data[:room])

    def finish(self):
        if self.finished_ms is None:
            self.finished_ms = ms(self.started)
        if not self.done.done():
            self.done.set_result(None)

    def stopped(self):
        return self.done.done() or self.reset_code is not None or self.stop_sending_code is not None

    def result(self):
        body = bytes(self.kept)
        return {
            "status": self.status,
            "headers": self.headers,
            "body_text": body.decode("utf-8", errors="replace"),
            "body_b64": base64.b64encode(body).decode(),
            "body_length": self.length,
            "body_sha256": self.sha.hexdigest(),
            "chunks": self.chunks,
            "chunk_count": self.chunk_count,
            "headers_ms": self.headers_ms,
            "elapsed_ms": self.finished_ms if self.finished_ms is not None else ms(self.started),
            "sent_bytes": self.sent_bytes,
            "upload_ms": self.upload_ms,
            "reset_code": self.reset_code,
            "stop_sending_code": self.stop_sending_code,
            "error": self.error,
        }


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic)
        self.exchanges = {}
        self.terminated = None
        self.progress = asyncio.Event()  # set whenever packets arrive (ACKs free send buffer)

    def quic_event_received(self, event):
        self.progress.set()
        if isinstance(event, ConnectionTerminated):
            self.terminated = {"error_code": event.error_code, "reason": event.reason_phrase}
            for ex in self.exchanges.values():
                if not ex.done.done():
                    ex.error = ex.error or "connection terminated"
                ex.finish()
        elif isinstance(event, StreamReset):
            ex = self.exchanges.get(event.stream_id)
            if ex:
                ex.reset_code = event.error_code
                ex.finish()
        elif isinstance(event, StopSendingReceived):
            ex = self.exchanges.get(event.stream_id)
            if ex:
                ex.stop_sending_code = event.error_code
        try:
            h3_events = self.h3.handle_event(event)
        except Exception as e:  # a protocol violation, as aioquic sees it
            for ex in self.exchanges.values():
                ex.error = ex.error or f"h3 error: {e!r}"
                ex.finish()
            return
        for ev in h3_events:
            ex = self.exchanges.get(getattr(ev, "stream_id", None))
            if ex is None:
                continue
            if isinstance(ev, HeadersReceived):
                if ex.status is None:
                    ex.headers_ms = ms(ex.started)
                    for n, v in ev.headers:
                        if n == b":status":
                            ex.status = int(v)
                    ex.headers = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in ev.headers if not n.startswith(b":")]
                # A trailer section: ignored.
            elif isinstance(ev, DataReceived):
                ex.data(ev.data)
            if getattr(ev, "stream_ended", False):
                ex.finish()

    async def send_pattern(self, stream_id, ex, pattern):
        total = int(pattern["total"])
        size = int(pattern.get("chunk_size", 65536))
        max_buffered = int(pattern.get("max_buffered", 4 << 20))
        base = bytes(i % PATTERN_PERIOD for i in range(size + PATTERN_PERIOD))
        sender = self._quic._streams[stream_id].sender
        sent = 0
        while sent < total and not ex.stopped():
            n = min(size, total - sent)
            start = sent % PATTERN_PERIOD
            self.h3.send_data(stream_id, base[start : start + n], end_stream=sent + n == total)
            sent += n
            ex.sent_bytes = sent
            self.transmit()
            # Wait for ACKs while too much is unacknowledged: flow control
            # and congestion control decide the pace, memory stays bounded.
            while len(sender._buffer) > max_buffered and not ex.stopped():
                self.progress.clear()
                try:
                    await asyncio.wait_for(self.progress.wait(), 0.05)
                except asyncio.TimeoutError:
                    pass
        if sent == total:
            ex.upload_ms = ms(ex.started)

    async def run_request(self, spec, authority):
        stream_id = self._quic.get_next_available_stream_id()
        ex = Exchange(int(spec.get("body_keep", 1 << 20)))
        self.exchanges[stream_id] = ex
        headers = [
            (b":method", spec.get("method", "GET").encode()),
            (b":scheme", b"https"),
            (b":authority", authority.encode()),
            (b":path", spec["path"].encode("latin-1")),
        ] + [(n.encode("latin-1"), v.encode("latin-1")) for n, v in spec.get("headers", [])]
        body = None
        if spec.get("body_text") is not None:
            body = spec["body_text"].encode("utf-8")
        elif spec.get("body_b64") is not None:
            body = base64.b64decode(spec["body_b64"])
        pattern = spec.get("body_pattern")
        if spec.get("content_length") and (body is not None or pattern):
            length = len(body) if body is not None else int(pattern["total"])
            headers.append((b"content-length", str(length).encode()))
        try:
            self.h3.send_headers(stream_id, headers, end_stream=not body and not pattern)
            self.transmit()
            if pattern:
                await self.send_pattern(stream_id, ex, pattern)
            elif body:
                self.h3.send_data(stream_id, body, end_stream=True)
                ex.sent_bytes = len(body)
                ex.upload_ms = ms(ex.started)
                self.transmit()
        except Exception as e:  # e.g. the server reset the stream
            if not ex.stopped():
                ex.error = f"send failed: {e!r}"
        return ex


async def run(args, plan):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
    config.verify_mode = ssl.CERT_NONE
    config.server_name = "localhost"
    timeout = float(plan.get("timeout", 30.0))
    deadline = time.monotonic() + timeout
    out = {"connected": False, "handshake_error": None, "alpn": None, "responses": [], "connection_terminated": None}
    authority = f"{args.host}:{args.port}"
    try:
        async with connect(args.host, args.port, configuration=config, create_protocol=Client, wait_connected=False) as client:
            client.transmit()
            try:
                await asyncio.wait_for(client.wait_connected(), min(timeout, 10.0))
            except Exception as e:
                out["handshake_error"] = repr(e) or "timeout"
                return out
            out["connected"] = True
            out["alpn"] = client._quic.tls.alpn_negotiated

            async def one(spec):
                ex = await client.run_request(spec, authority)
                try:
                    await asyncio.wait_for(asyncio.shield(ex.done), max(0.0, deadline - time.monotonic()))
                except asyncio.TimeoutError:
                    ex.error = ex.error or "timeout"
                return ex

            if plan.get("sequential", True):
                exchanges = [await one(spec) for spec in plan["requests"]]
            else:
                exchanges = await asyncio.gather(*(one(spec) for spec in plan["requests"]))
            out["responses"] = [ex.result() for ex in exchanges]
            out["connection_terminated"] = client.terminated
            if client.terminated is None:
                client.close()
    except Exception as e:
        if not out["connected"]:
            out["handshake_error"] = repr(e)
        else:
            out["client_error"] = repr(e)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    try:
        plan = json.load(sys.stdin)
        if not isinstance(plan.get("requests"), list):
            raise ValueError("plan.requests must be a list")
    except Exception as e:
        print(f"invalid plan: {e}", file=sys.stderr)
        sys.exit(2)
    print(json.dumps(asyncio.run(run(args, plan))))


if __name__ == "__main__":
    main()
