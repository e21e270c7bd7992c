"""Scripted HTTP/3 client on aioquic, for the project's tests.

Reads a JSON plan on stdin, runs it against --host/--port, prints one JSON
result on stdout. aioquic is an HTTP/3 stack independent of quiche, so what
this reports is what a third-party client really saw on the wire: field
lines exactly as decoded (order, case, duplicates), stream resets and
STOP_SENDING frames, and how the connection ended.

A request's body: body_text, body_b64, body_chunks_b64 (sent apart, with
chunk_delay_ms), or body_generate {total, chunk_size, pattern, max_buffered}
(made while sent: zeros, or byte i = i % 251 with pattern); content_length
adds the header for it. The response: kept whole, up to body_keep bytes, or
not at all (discard_body), and hashed in any case; each piece's arrival time
is in chunks.

Who the server is: server_name (the SNI, default "localhost"); ca (a PEM
file) verifies the server's chain against it and its name against
server_name, otherwise nothing is verified (the demo identity is
self-signed); client_cert and client_key (PEM files) are presented when the
server asks for a certificate. peer_chain_sha256 in the result is what the
server presented: the SHA-256 (lowercase hex) of each certificate's DER,
leaf first, also when the handshake then failed; empty when no Certificate
message came (a resumed session has none). A failed handshake's
handshake_error says how the connection closed: the error code (a TLS alert
by name), its reason and which side sent it. A client certificate the
server refuses (or a missing one it requires) is refused only after the
client's side of the TLS 1.3 handshake is complete: connected is then true,
and connection_terminated and the requests' errors carry the alert
(certificate_required is 0x174).
"""

import argparse
import asyncio
import base64
import hashlib
import json
import pickle
import ssl
import sys
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import Buffer, BufferReadError
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StopSendingReceived, StreamDataReceived, StreamReset
from aioquic.tls import load_pem_x509_certificates
from tls_report import describe_close, peer_chain_sha256

H3_REQUEST_CANCELLED = 0x10C
# body_generate with "pattern": byte i of the body is i % 251 (test/helpers/pattern.ts).
PATTERN_PERIOD = 251
# Arrival times kept per response (the first ones; chunk_count has them all).
MAX_CHUNK_RECORDS = 2000


class NoContentAwareH3Connection(H3Connection):
    """aioquic 1.7.2 holds every response to its content-length, HEAD
    answers and 304s included, and closes the connection (H3_MESSAGE_ERROR)
    when the body differs. On those two the field describes the body a GET
    would get (RFC 9110 sections 8.6, 9.3.2 and 15.4.5) and no content
    follows, so the check is skipped for them, as browsers and quic-go do."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.no_content_streams = set()

    def _decode_headers(self, stream_id, frame):
        headers = super()._decode_headers(stream_id, frame)
        if (b":status", b"304") in headers:
            self.no_content_streams.add(stream_id)
        return headers

    def _check_content_length(self, stream):
        if stream.stream_id not in self.no_content_streams:
            super()._check_content_length(stream)


def ms(since):
    return round((time.monotonic() - since) * 1000, 3)


class Exchange:
    def __init__(self):
        self.status = None
        self.headers = []
        self.body = bytearray()
        self.ended = False
        self.reset_code = None
        self.stop_sending_code = None
        self.error = None
        self.sent_bytes = None
        self.trailers = None
        self.interim = []
        # discard_body: count and hash the body instead of keeping it;
        # body_keep: keep at most this many bytes of it (hashing it all).
        self.discard = False
        self.keep = None
        # When each piece of the body arrived: [[ms since the request, bytes], ...].
        self.chunks = []
        self.chunk_count = 0
        self.headers_ms = None
        # When the last request body byte was handed to QUIC.
        self.upload_ms = None
        self.body_len = 0
        self.sha = hashlib.sha256()
        # stop_after_bytes: STOP_SENDING (and RESET_STREAM) once this much arrived.
        self.stop_after = None
        self.stop_code = H3_REQUEST_CANCELLED
        self.stopped = False
        self.started = time.monotonic()
        self.finished_at = None
        self.done = asyncio.get_running_loop().create_future()

    def finish(self):
        if self.finished_at is None:
            self.finished_at = time.monotonic()
        if not self.done.done():
            self.done.set_result(None)

    def result(self):
        end = self.finished_at or time.monotonic()
        return {
            "status": self.status,
            "headers": self.headers,
            "body_b64": base64.b64encode(bytes(self.body)).decode(),
            "body_text": bytes(self.body).decode("utf-8", errors="replace"),
            "ended": self.ended,
            "reset_code": self.reset_code,
            "stop_sending_code": self.stop_sending_code,
            "error": self.error,
            "elapsed_ms": round((end - self.started) * 1000, 3),
            "sent_bytes": self.sent_bytes,
            "trailers": self.trailers,
            "interim": self.interim,
            "body_length": self.body_len,
            "body_sha256": self.sha.hexdigest(),
            "stopped": self.stopped,
            "chunks": self.chunks,
            "chunk_count": self.chunk_count,
            "headers_ms": self.headers_ms,
            "upload_ms": self.upload_ms,
        }

    def data(self, data):
        if not data:
            return
        self.chunk_count += 1
        if len(self.chunks) < MAX_CHUNK_RECORDS:
            self.chunks.append([ms(self.started), len(data)])
        self.body_len += len(data)
        self.sha.update(data)
        if self.discard:
            return
        room = len(data) if self.keep is None else self.keep - len(self.body)
        if room > 0:
            self.body.extend(data[:room])

    def stopped_sending(self):
        return self.done.done() or self.stop_sending_code is not None or self.reset_code is not None


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = NoContentAwareH3Connection(self._quic)
        self.exchanges = {}
        self.terminated = None
        # Which side began the close ("the server", "this client"; None: no
        # CONNECTION_CLOSE, an idle timeout): aioquic's ConnectionTerminated
        # does not say, its _close_begin does (is_initiator).
        self.closed_by = None
        self.terminated_event = None
        close_begin = self._quic._close_begin

        def note_close_begin(is_initiator, now):
            self.closed_by = "this client" if is_initiator else "the server"
            close_begin(is_initiator=is_initiator, now=now)

        self._quic._close_begin = note_close_begin
        # When set, leaving the connect() block sends no CONNECTION_CLOSE:
        # the socket is just closed, like a client that vanished.
        self.silent = False
        # aioquic discards GOAWAY without telling the application: the
        # server's control stream (ID 3) is read here too, so tests can see
        # the stream ID a graceful shutdown announced.
        self.goaway = None
        self.server_control = b""
        # Set whenever packets arrive (their ACKs free aioquic's send buffer).
        self.progress = asyncio.Event()

    def note_server_control(self, data):
        self.server_control += data
        buf = Buffer(data=self.server_control)
        try:
            buf.pull_uint_var()  # stream type
            while not buf.eof():
                frame_type = buf.pull_uint_var()
                payload = buf.pull_bytes(buf.pull_uint_var())
                if frame_type == 0x7:
                    self.goaway = Buffer(data=payload).pull_uint_var()
        except BufferReadError:
            pass  # a frame still arriving

    def quic_event_received(self, event):
        self.progress.set()
        if isinstance(event, StreamDataReceived) and event.stream_id == 3:
            self.note_server_control(event.data)
        if isinstance(event, ConnectionTerminated):
            self.terminated = {"error_code": event.error_code, "reason": event.reason_phrase}
            self.terminated_event = event
            for ex in self.exchanges.values():
                if ex.error is None and not ex.done.done():
                    ex.error = f"connection terminated ({describe_close(event, self.closed_by)})"
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
        except Exception as e:  # a server protocol violation, as aioquic sees it
            for ex in self.exchanges.values():
                ex.error = ex.error or f"h3 error: {e!r}"
                ex.finish()
            return
        for ev in h3_events:
            ex = self.exchanges.get(getattr(ev, "stream_id", None))
            if ex is None:
                continue
            if isinstance(ev, HeadersReceived):
                lines = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in ev.headers]
                status = dict(ev.headers).get(b":status", b"")
                if ex.status is None and len(status) == 3 and status.startswith(b"1"):
                    # An interim response (100, 103): kept apart, the final one follows.
                    ex.interim.append(lines)
                elif ex.status is None:
                    ex.headers_ms = ms(ex.started)
                    ex.headers = lines
                    for n, v in ev.headers:
                        if n == b":status":
                            ex.status = int(v)
                else:
                    ex.trailers = lines
            elif isinstance(ev, DataReceived):
                ex.data(ev.data)
                if ex.stop_after is not None and ex.body_len >= ex.stop_after and not ex.stopped:
                    ex.stopped = True
                    self._quic.stop_stream(ev.stream_id, ex.stop_code)
                    try:
                        self._quic.reset_stream(ev.stream_id, ex.stop_code)
                    except Exception:
                        pass  # the request side already ended
                    self.transmit()
                    ex.finish()
            if getattr(ev, "stream_ended", False):
                ex.ended = True
                ex.finish()

    def close(self, *args, **kwargs):
        if not self.silent:
            super().close(*args, **kwargs)

    async def wait_closed(self):
        if not self.silent:
            await super().wait_closed()

    async def send_generated(self, stream_id, ex, generate, end_stream):
        """Sends `total` bytes made while they are sent (zeros, or with
        "pattern" byte i = i % 251), `chunk_size` at a time, never leaving
        more than `max_buffered` bytes unacknowledged in aioquic's send
        buffer: QUIC flow control and the server set the pace, a huge upload
        costs the client no memory, and it stops as soon as the server
        answers, resets or sends STOP_SENDING."""
        total = int(generate["total"])
        size = int(generate.get("chunk_size", 65536))
        max_buffered = int(generate.get("max_buffered", 4 * size))
        period = PATTERN_PERIOD if generate.get("pattern") else 1
        base = bytes(i % PATTERN_PERIOD for i in range(size + PATTERN_PERIOD)) if period > 1 else bytes(size)
        sender = self._quic._streams[stream_id].sender
        sent = 0
        while sent < total and not ex.stopped_sending():
            n = min(size, total - sent)
            start = sent % period
            self.h3.send_data(stream_id, base[start : start + n], end_stream=end_stream and sent + n == total)
            sent += n
            self.transmit()
            while len(sender._buffer) > max_buffered and not ex.stopped_sending():
                self.progress.clear()
                try:
                    await asyncio.wait_for(self.progress.wait(), 0.05)
                except asyncio.TimeoutError:
                    pass
        ex.sent_bytes = sent
        if sent == total:
            ex.upload_ms = ms(ex.started)

    async def run_request(self, spec, authority):
        stream_id = self._quic.get_next_available_stream_id()
        ex = Exchange()
        ex.discard = bool(spec.get("discard_body"))
        if spec.get("body_keep") is not None:
            ex.keep = int(spec["body_keep"])
        if spec.get("stop_after_bytes") is not None:
            ex.stop_after = int(spec["stop_after_bytes"])
            ex.stop_code = int(spec.get("stop_code", H3_REQUEST_CANCELLED))
        self.exchanges[stream_id] = ex
        if spec.get("method", "GET") == "HEAD":
            self.h3.no_content_streams.add(stream_id)
        if spec.get("raw_headers") is not None:
            headers = [(n.encode("latin-1"), v.encode("latin-1")) for n, v in spec["raw_headers"]]
        else:
            headers = [
                (b":method", spec.get("method", "GET").encode()),
                (b":scheme", b"https"),
                (b":authority", authority.encode()),
                (b":path", spec["path"].encode("latin-1")),
            ] + [(n.encode("latin-1"), v.encode("latin-1")) for n, v in spec.get("headers", [])]
        chunks = []
        if spec.get("body_chunks_b64") is not None:
            chunks = [base64.b64decode(c) for c in spec["body_chunks_b64"]]
        elif spec.get("body_b64"):
            chunks = [base64.b64decode(spec["body_b64"])]
        elif spec.get("body_text") is not None:
            text = spec["body_text"].encode("utf-8")
            chunks = [text] if text else []
        end_stream = spec.get("end_stream", True)
        generate = spec.get("body_generate")
        has_body = bool(chunks) or bool(generate) or spec.get("body_text") is not None
        if spec.get("content_length") and has_body and spec.get("raw_headers") is None:
            # Without it the body is framed by DATA frames and FIN alone.
            length = int(generate["total"]) if generate else sum(len(c) for c in chunks)
            headers.append((b"content-length", str(length).encode()))
        reset_after = spec.get("reset_after_chunks")
        delay = spec.get("chunk_delay_ms", 0) / 1000.0
        try:
            self.h3.send_headers(stream_id, headers, end_stream=end_stream and not chunks and not generate)
            self.transmit()
            if generate:
                await self.send_generated(stream_id, ex, generate, end_stream)
            for i, chunk in enumerate(chunks):
                if reset_after is not None and i == reset_after:
                    break
                if ex.done.done() or ex.stop_sending_code is not None:
                    break  # the server answered or asked us to stop
                if delay and i > 0:
                    await asyncio.sleep(delay)
                last = i == len(chunks) - 1
                self.h3.send_data(stream_id, chunk, end_stream=end_stream and last and reset_after is None)
                self.transmit()
                if last:
                    ex.sent_bytes = sum(len(c) for c in chunks)
                    ex.upload_ms = ms(ex.started)
            if reset_after is not None:
                self._quic.reset_stream(stream_id, spec.get("reset_code", H3_REQUEST_CANCELLED))
                self.transmit()
        except Exception as e:  # e.g. the stream was already reset by the server
            if not ex.done.done() and ex.stop_sending_code is None:
                ex.error = f"send failed: {e!r}"
        return stream_id, ex


async def rebind(client, host):
    """A NAT rebinding: the same connection, from a new UDP port. The
    protocol takes the new socket (connection_made replaces its transport);
    the old one stays open but unused."""
    # A dual-stack IPv6 socket, as aioquic's connect() makes (it sends to
    # IPv4-mapped addresses).
    import socket

    sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    sock.bind(("::", 0, 0, 0))
    loop = asyncio.get_running_loop()
    await loop.create_datagram_endpoint(lambda: client, sock=sock)


async def run_many(args, plan):
    """`connections`: that many clients at once, each running the plan."""
    results = await asyncio.gather(*(run(args, plan) for _ in range(int(plan["connections"]))))
    return {"connections": list(results)}


def set_identity_checks(config, plan):
    """ca: verify the server's chain against it and its name against
    server_name (aioquic checks both unless verify_mode is CERT_NONE);
    client_cert/client_key: the certificate sent if the server asks. The
    files are read and parsed here, so that a bad one fails before the
    handshake instead of inside aioquic's packet handling."""
    if plan.get("ca"):
        with open(plan["ca"], "rb") as f:
            cadata = f.read()
        if not load_pem_x509_certificates(cadata):
            raise ValueError(f"no certificate in {plan['ca']}")
        config.verify_mode = ssl.CERT_REQUIRED
        config.load_verify_locations(cadata=cadata)
    else:
        # The demo identity is self-signed: nothing to verify it against.
        config.verify_mode = ssl.CERT_NONE
    if plan.get("client_cert"):
        config.load_cert_chain(plan["client_cert"], plan.get("client_key"))


async def run(args, plan):
    # "alpn" in the plan overrides h3 (e.g. to provoke a failed handshake).
    config = QuicConfiguration(is_client=True, alpn_protocols=plan.get("alpn", H3_ALPN))
    config.server_name = plan.get("server_name") or "localhost"
    # Resumption and 0-RTT: a ticket kept from an earlier run (pickled), and
    # "early": the requests go out before the handshake completes, as early
    # data when the ticket allows it.
    if plan.get("session_ticket_in"):
        with open(plan["session_ticket_in"], "rb") as f:
            config.session_ticket = pickle.load(f)
    tickets = []
    timeout = float(plan.get("timeout", 5.0))
    deadline = time.monotonic() + timeout
    out = {
        "connected": False, "handshake_error": None, "alpn": None, "responses": [], "connection_terminated": None,
        "peer_chain_sha256": [],
    }
    close = plan.get("close", {"error_code": 0, "reason": ""})
    authority = f"{args.host}:{args.port}"
    try:
        set_identity_checks(config, plan)
    except Exception as e:
        out["handshake_error"] = f"cannot load the plan's ca / client_cert / client_key: {type(e).__name__}: {e}"
        return out
    try:
        async with connect(
            args.host, args.port, configuration=config, create_protocol=Client, wait_connected=False,
            session_ticket_handler=tickets.append,
        ) as client:
            early = []
            if plan.get("early"):
                for spec in plan["requests"]:
                    early.append(asyncio.ensure_future(client.run_request(spec, authority)))
            client.transmit()  # connect(wait_connected=False) leaves the Initial unsent
            try:
                await asyncio.wait_for(client.wait_connected(), timeout)
            except Exception as e:
                out["peer_chain_sha256"] = peer_chain_sha256(client._quic)
                if client.terminated is not None:
                    out["handshake_error"] = describe_close(client.terminated_event, client.closed_by)
                    out["connection_terminated"] = client.terminated
                else:
                    out["handshake_error"] = repr(e) or "timeout"
                client.silent = True
                return out
            out["connected"] = True
            out["peer_chain_sha256"] = peer_chain_sha256(client._quic)
            out["alpn"] = client._quic.tls.alpn_negotiated
            out["session_resumed"] = client._quic.tls.session_resumed
            out["early_data_accepted"] = client._quic.tls.early_data_accepted
            exchanges = []

            async def one(spec):
                _, ex = await client.run_request(spec, authority)
                remaining = max(0.0, deadline - time.monotonic())
                try:
                    await asyncio.wait_for(asyncio.shield(ex.done), remaining)
                except asyncio.TimeoutError:
                    ex.error = ex.error or "timeout"
                return ex

            if early:
                for started in early:
                    _, ex = await started
                    try:
                        await asyncio.wait_for(asyncio.shield(ex.done), max(0.0, deadline - time.monotonic()))
                    except asyncio.TimeoutError:
                        ex.error = ex.error or "timeout"
                    exchanges.append(ex)
            elif plan.get("sequential"):
                for i, spec in enumerate(plan["requests"]):
                    if plan.get("rebind_before") == i:
                        await rebind(client, args.host)
                    exchanges.append(await one(spec))
            else:
                exchanges = await asyncio.gather(*(one(spec) for spec in plan["requests"]))
            out["responses"] = [ex.result() for ex in exchanges]
            if plan.get("linger_ms"):
                # Stay connected a while after the last answer, so what the
                # server still has to say (a PATH_CHALLENGE on a new path) is
                # answered before the close.
                await asyncio.sleep(plan["linger_ms"] / 1000)
            out["connection_terminated"] = client.terminated
            out["goaway"] = client.goaway
            if plan.get("session_ticket_out"):
                # The ticket arrives after the handshake; wait for it briefly.
                for _ in range(20):
                    if tickets:
                        break
                    await asyncio.sleep(0.05)
                if tickets:
                    with open(plan["session_ticket_out"], "wb") as f:
                        pickle.dump(tickets[-1], f)
                out["session_ticket"] = bool(tickets)
            if close is None:
                client.silent = True
            elif client.terminated is None:
                client.close(error_code=close.get("error_code", 0), reason_phrase=close.get("reason", ""))
                client.silent = True  # already closed; do not close twice on exit
                await asyncio.sleep(0.05)  # let CONNECTION_CLOSE leave the socket
    except Exception as e:
        if not out["connected"]:
            out["handshake_error"] = repr(e)
        else:
            out.setdefault("client_error", repr(e))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__)
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
    result = asyncio.run(run_many(args, plan) if plan.get("connections") else run(args, plan))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
