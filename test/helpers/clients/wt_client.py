"""Scripted WebTransport client on aioquic, for the project's tests.

Reads a JSON plan on stdin and runs its actions in order on one QUIC
connection, then prints one JSON result: a list with one entry per action.

Actions ("op"):
  session  {name, path}                      extended CONNECT; result: status
  bidi     {session, name, data_b64, fin}    open a WT bidirectional stream and send; with "wait": read the echo until FIN
  uni      {session, name, data_b64}         open a WT unidirectional stream, send with FIN; with "wait": read the server's answer stream
  finish   {stream}                          send FIN on an open bidi stream (by name) and read the echo to its end
  reset    {stream, code}                    reset a stream (by name)
  datagram {session, data_b64, count}        send count datagrams; result: how many echoes came back within "wait_ms"
  close    {session, code, reason}           CLOSE_WEBTRANSPORT_SESSION capsule, then FIN on the CONNECT stream
  fin_session {session}                      just FIN the CONNECT stream
  raw_bidi {session_id, data_b64}            a WT bidi stream naming an arbitrary session ID; result: reset code if any
  server_streams {session, count}            wait until the server opened `count` streams on the session and ended them; result: their data, by stream ID
  reply    {stream_id, data_b64}             send on a stream the server opened (bidirectional), with FIN
  await_close {session}                      wait for the server to end the CONNECT stream; result: the CLOSE_WEBTRANSPORT_SESSION code and reason it sent, if any
  get      {path}                            an ordinary HTTP/3 GET on the same connection; result: status, headers, body
  sleep    {ms}
"close": null in the plan drops the connection without CONNECTION_CLOSE.
"""

import asyncio
import base64
import ssl
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, FrameType, H3Connection
from aioquic.h3.events import (
    DatagramReceived,
    DataReceived,
    HeadersReceived,
    WebTransportStreamDataReceived,
)
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StreamReset

from plan_main import plan_main

CLOSE_WEBTRANSPORT_SESSION = 0x2843


class Stream:
    def __init__(self):
        self.data = bytearray()
        self.ended = False
        self.reset = None
        self.headers = None
        self.done = asyncio.get_running_loop().create_future()

    def finish(self):
        if not self.done.done():
            self.done.set_result(None)


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=True)
        self.streams = {}  # stream id -> Stream
        self.server_uni = {}  # session id -> list of Stream (server-opened)
        self.server_opened = {}  # session id -> {stream id: Stream} (server-opened, either kind)
        self.datagrams = {}  # session id -> count received
        self.datagram_payloads = {}  # session id -> the first 64 received
        self.terminated = None
        self.silent = False

    def stream(self, sid):
        if sid not in self.streams:
            self.streams[sid] = Stream()
        return self.streams[sid]

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            self.terminated = {"error_code": event.error_code, "reason": event.reason_phrase}
            for s in self.streams.values():
                s.finish()
        elif isinstance(event, StreamReset):
            s = self.stream(event.stream_id)
            s.reset = event.error_code
            s.finish()
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived):
                s = self.stream(ev.stream_id)
                s.headers = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in ev.headers]
                if ev.stream_ended:
                    s.ended = True
                    s.finish()
                elif not s.done.done():
                    # For a CONNECT the headers are the whole answer we wait for.
                    s.done.set_result(None)
            elif isinstance(ev, DataReceived):
                s = self.stream(ev.stream_id)
                s.data.extend(ev.data)
                if ev.stream_ended:
                    s.ended = True
                    s.finish()
            elif isinstance(ev, WebTransportStreamDataReceived):
                is_new = ev.stream_id not in self.streams
                s = self.stream(ev.stream_id)
                if is_new and ev.stream_id % 4 == 3:  # server-initiated uni
                    self.server_uni.setdefault(ev.session_id, []).append(s)
                if is_new and ev.stream_id % 2 == 1:  # server-initiated, either kind
                    self.server_opened.setdefault(ev.session_id, {})[ev.stream_id] = s
                s.data.extend(ev.data)
                if ev.stream_ended:
                    s.ended = True
                    s.finish()
            elif isinstance(ev, DatagramReceived):
                self.datagrams[ev.stream_id] = self.datagrams.get(ev.stream_id, 0) + 1
                received = self.datagram_payloads.setdefault(ev.stream_id, [])
                if len(received) < 64:  # what a test reads back; the count above is the measure
                    received.append(ev.data)

    def close(self, *args, **kwargs):
        if not self.silent:
            super().close(*args, **kwargs)

    async def wait_closed(self):
        if not self.silent:
            await super().wait_closed()


async def wait(fut, timeout):
    try:
        await asyncio.wait_for(asyncio.shield(fut), timeout)
        return True
    except asyncio.TimeoutError:
        return False


async def run(args, plan):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    config.verify_mode = ssl.CERT_NONE
    config.server_name = "localhost"
    timeout = float(plan.get("timeout", 5.0))
    out = {"connected": False, "results": [], "connection_terminated": None}
    authority = f"{args.host}:{args.port}"
    names = {}  # name -> stream/session id
    async with connect(args.host, args.port, configuration=config, create_protocol=Client, wait_connected=False) as c:
        c.transmit()
        if not await wait(c.wait_connected(), timeout):
            c.silent = True
            out["error"] = "handshake timeout"
            return out
        out["connected"] = True
        for action in plan["actions"]:
            op = action["op"]
            res = {"op": op}
            started = time.monotonic()
            data = base64.b64decode(action.get("data_b64", ""))
            if op == "session":
                sid = c._quic.get_next_available_stream_id()
                c.h3.send_headers(
                    sid,
                    [
                        (b":method", b"CONNECT"),
                        (b":protocol", action.get("protocol", "webtransport").encode()),
                        (b":scheme", b"https"),
                        (b":authority", authority.encode()),
                        (b":path", action.get("path", "/wt").encode()),
                    ],
                    end_stream=False,
                )
                c.transmit()
                s = c.stream(sid)
                await wait(s.done, timeout)
                names[action["name"]] = sid
                status = None
                for n, v in s.headers or []:
                    if n == ":status":
                        status = int(v)
                res.update(status=status, session_id=sid, headers=s.headers)
            elif op in ("bidi", "uni"):
                session = names[action["session"]]
                sid = c.h3.create_webtransport_stream(session, is_unidirectional=(op == "uni"))
                if op == "bidi":
                    # aioquic 1.7.2 does not mark a bidirectional WebTransport
                    # stream it opened itself as such, and would parse the
                    # server's echo as HTTP/3 frames; mark it the way aioquic
                    # marks streams the peer opens.
                    with c.h3._get_or_create_stream(sid) as st:
                        st.frame_type = FrameType.WEBTRANSPORT_STREAM
                        st.session_id = session
                fin = True if op == "uni" else action.get("fin", True)
                c._quic.send_stream_data(sid, data, end_stream=fin)
                c.transmit()
                names[action.get("name", f"s{sid}")] = sid
                res["stream_id"] = sid
                if action.get("wait"):
                    if op == "bidi":
                        s = c.stream(sid)
                        await wait(s.done, timeout)
                        res.update(echo_b64=base64.b64encode(bytes(s.data)).decode(), ended=s.ended, reset=s.reset)
                    else:
                        deadline = time.monotonic() + timeout
                        before = len(c.server_uni.get(session, []))
                        while time.monotonic() < deadline:
                            answers = c.server_uni.get(session, [])
                            if len(answers) > action.get("answers_before", 0) and all(a.ended for a in answers):
                                break
                            await asyncio.sleep(0.005)
                        answers = c.server_uni.get(session, [])
                        res.update(answers_b64=[base64.b64encode(bytes(a.data)).decode() for a in answers])
                elif op == "bidi" and action.get("wait_reset"):
                    s = c.stream(sid)
                    await wait(s.done, timeout)
                    res.update(reset=s.reset)
            elif op == "finish":
                sid = names[action["stream"]]
                c._quic.send_stream_data(sid, b"", end_stream=True)
                c.transmit()
                s = c.stream(sid)
                await wait(s.done, timeout)
                res.update(echo_b64=base64.b64encode(bytes(s.data)).decode(), ended=s.ended)
            elif op == "reset":
                sid = names[action["stream"]]
                c._quic.reset_stream(sid, action.get("code", 0))
                c.transmit()
            elif op == "datagram":
                session = names[action["session"]]
                before = c.datagrams.get(session, 0)
                before_payloads = len(c.datagram_payloads.get(session, []))
                for _ in range(action.get("count", 1)):
                    c.h3.send_datagram(session, data)
                    c.transmit()
                    if action.get("pace_ms"):
                        await asyncio.sleep(action["pace_ms"] / 1000)
                deadline = time.monotonic() + action.get("wait_ms", 500) / 1000
                while time.monotonic() < deadline and c.datagrams.get(session, 0) - before < action.get("count", 1):
                    await asyncio.sleep(0.005)
                res["echoed"] = c.datagrams.get(session, 0) - before
                res["answers_b64"] = [base64.b64encode(d).decode() for d in c.datagram_payloads.get(session, [])[before_payloads:]]
            elif op in ("close", "fin_session"):
                session = names[action["session"]]
                payload = b""
                if op == "close":
                    reason = action.get("reason", "").encode()
                    value = int(action.get("code", 0)).to_bytes(4, "big") + reason
                    buf = Buffer(capacity=len(value) + 16)
                    buf.push_uint_var(CLOSE_WEBTRANSPORT_SESSION)
                    buf.push_uint_var(len(value))
                    buf.push_bytes(value)
                    payload = buf.data
                c.h3.send_data(session, payload, end_stream=True)
                c.transmit()
                s = c.stream(session)
                s.done = asyncio.get_running_loop().create_future()
                # The server answers by finishing its side of the CONNECT stream.
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and not (s.ended or s.reset is not None):
                    await asyncio.sleep(0.005)
                res.update(server_finished=s.ended)
            elif op == "raw_bidi":
                sid = c._quic.get_next_available_stream_id()
                buf = Buffer(capacity=16)
                buf.push_uint_var(0x41)
                buf.push_uint_var(int(action["session_id"]))
                c._quic.send_stream_data(sid, buf.data + data, end_stream=True)
                c.transmit()
                s = c.stream(sid)
                await wait(s.done, timeout)
                res.update(reset=s.reset)
            elif op == "get":
                sid = c._quic.get_next_available_stream_id()
                c.h3.send_headers(
                    sid,
                    [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()), (b":path", action["path"].encode())],
                    end_stream=True,
                )
                c.transmit()
                s = c.stream(sid)
                s.done = asyncio.get_running_loop().create_future()
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and not s.ended and s.reset is None:
                    await asyncio.sleep(0.002)
                status = None
                for n, v in s.headers or []:
                    if n == ":status":
                        status = int(v)
                res.update(status=status, headers=s.headers, body=bytes(s.data).decode("utf-8", "replace"))
            elif op == "server_streams":
                session = names[action["session"]]
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    opened = c.server_opened.get(session, {})
                    if len(opened) >= action.get("count", 1) and all(s.ended or s.reset is not None for s in opened.values()):
                        break
                    await asyncio.sleep(0.005)
                opened = c.server_opened.get(session, {})
                res["streams"] = {
                    str(sid): {"data_b64": base64.b64encode(bytes(s.data)).decode(), "ended": s.ended, "reset": s.reset}
                    for sid, s in opened.items()
                }
            elif op == "reply":
                sid = int(action["stream_id"])
                c._quic.send_stream_data(sid, data, end_stream=True)
                c.transmit()
            elif op == "await_close":
                session = names[action["session"]]
                s = c.stream(session)
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline and not (s.ended or s.reset is not None):
                    await asyncio.sleep(0.005)
                res.update(ended=s.ended, reset=s.reset, code=None, reason=None, capsule_types=[])
                buf = Buffer(data=bytes(s.data))
                while not buf.eof():
                    ty = buf.pull_uint_var()
                    res["capsule_types"].append(ty)
                    length = buf.pull_uint_var()
                    value = buf.pull_bytes(length)
                    if ty == CLOSE_WEBTRANSPORT_SESSION and length >= 4:
                        res.update(code=int.from_bytes(value[:4], "big"), reason=value[4:].decode("utf-8", "replace"))
            elif op == "sleep":
                await asyncio.sleep(action["ms"] / 1000)
            res["ms"] = round((time.monotonic() - started) * 1000, 1)
            out["results"].append(res)
        out["connection_terminated"] = c.terminated
        if plan.get("close", {}) is None:
            c.silent = True
    return out


if __name__ == "__main__":
    plan_main(run, __doc__)
