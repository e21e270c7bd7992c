"""Raw HTTP/3 bytes on aioquic's QUIC layer, for the bad-input tests.

Reads a JSON plan on stdin, runs its actions in order on one QUIC
connection, prints one JSON result on stdout. Unlike h3client.py, nothing
here has to be valid HTTP/3: streams carry whatever bytes the plan builds,
so the test sees how the server answers a second control stream, DATA
before HEADERS, invalid QPACK, and so on. aioquic's H3Connection (its own
control and QPACK streams, response parsing) is used unless "h3" is false.

Stream contents are lists of parts:
  {"hex": "..."}                         raw bytes
  {"varint": n}                          one QUIC variable-length integer
  {"headers": [[name, value], ...]}      a HEADERS frame (QPACK, static table and literals only)
  {"qpack_hex": "..."}                   a HEADERS frame around a hand-made field section
  {"data": "text"}                       a DATA frame
  {"frame": {"type": n, "hex": "..."}}   any frame

Actions ("op"):
  uni       {name, parts, fin}          open a client unidirectional stream and send
  bidi      {name, parts, fin}          open a client bidirectional stream and send
  control   {parts, fin}                append to aioquic's own control stream
  encoder   {parts, fin}                ... its QPACK encoder stream
  decoder   {parts, fin}                ... its QPACK decoder stream
  reset     {stream, code}              RESET_STREAM on "control"/"encoder"/"decoder" or a named stream
  datagram  {parts}                     one QUIC DATAGRAM frame
  request   {name, path}                an ordinary GET through H3Connection
  wait      {name | "closed", ms}       wait until that stream ended/was reset, or the connection closed
  sleep     {ms}
"fresh": "/path" in the plan: afterwards, a new connection GETs that path
(the server must still serve other connections); its status is reported.
"""

import asyncio
import ssl
import time

import pylsqpack
from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.buffer import Buffer
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.events import ConnectionTerminated, StopSendingReceived, StreamDataReceived, StreamReset

from plan_main import plan_main


def varint(n):
    buf = Buffer(capacity=8)
    buf.push_uint_var(n)
    return buf.data


def frame(ty, payload):
    return varint(ty) + varint(len(payload)) + payload


def build(parts, stream_id):
    out = b""
    for p in parts:
        if "hex" in p:
            out += bytes.fromhex(p["hex"])
        elif "varint" in p:
            out += varint(int(p["varint"]))
        elif "headers" in p:
            # A fresh encoder with no dynamic table: static references and literals only.
            enc = pylsqpack.Encoder()
            _, block = enc.encode(stream_id, [(n.encode("latin-1"), v.encode("latin-1")) for n, v in p["headers"]])
            out += frame(0x01, block)
        elif "qpack_hex" in p:
            out += frame(0x01, bytes.fromhex(p["qpack_hex"]))
        elif "data" in p:
            out += frame(0x00, p["data"].encode("latin-1"))
        elif "frame" in p:
            out += frame(int(p["frame"]["type"]), bytes.fromhex(p["frame"].get("hex", "")))
    return out


class Stream:
    def __init__(self):
        self.status = None
        self.headers = None
        self.body = bytearray()
        self.raw = bytearray()
        self.ended = False
        self.reset_code = None
        self.stop_sending_code = None

    def done(self):
        return self.ended or self.reset_code is not None

    def result(self):
        return {
            "status": self.status,
            "headers": self.headers,
            "body": bytes(self.body).decode("utf-8", "replace"),
            "ended": self.ended,
            "reset_code": self.reset_code,
            "stop_sending_code": self.stop_sending_code,
        }


class Client(QuicConnectionProtocol):
    # Set before connecting: H3Connection must exist before the server's
    # control stream arrives, or its SETTINGS are missed.
    use_h3 = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic) if self.use_h3 else None
        self.streams = {}  # QUIC stream id -> Stream
        self.terminated = None

    def stream(self, sid):
        return self.streams.setdefault(sid, Stream())

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            self.terminated = {
                "error_code": event.error_code,
                # aioquic reports the frame type only for a transport close.
                "application": event.frame_type is None,
                "reason": event.reason_phrase,
            }
        elif isinstance(event, StreamReset):
            self.stream(event.stream_id).reset_code = event.error_code
        elif isinstance(event, StopSendingReceived):
            self.stream(event.stream_id).stop_sending_code = event.error_code
        elif isinstance(event, StreamDataReceived) and self.h3 is None:
            s = self.stream(event.stream_id)
            s.raw.extend(event.data)
            s.ended = s.ended or event.end_stream
        if self.h3 is None:
            return
        try:
            h3_events = self.h3.handle_event(event)
        except Exception:  # what aioquic thinks of the server is not under test here
            return
        for ev in h3_events:
            sid = getattr(ev, "stream_id", None)
            if sid not in self.streams:
                continue
            s = self.streams[sid]
            if isinstance(ev, HeadersReceived) and s.headers is None:
                s.headers = [[n.decode("latin-1"), v.decode("latin-1")] for n, v in ev.headers]
                for n, v in ev.headers:
                    if n == b":status":
                        s.status = int(v)
            elif isinstance(ev, DataReceived):
                s.body.extend(ev.data)
            if getattr(ev, "stream_ended", False):
                s.ended = True


def own_stream(c, which):
    """aioquic's own control or QPACK stream."""
    return {
        "control": c.h3._local_control_stream_id,
        "encoder": c.h3._local_encoder_stream_id,
        "decoder": c.h3._local_decoder_stream_id,
    }[which]


def make_config():
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    config.verify_mode = ssl.CERT_NONE
    config.server_name = "localhost"
    return config


async def until(pred, timeout):
    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    return pred()


async def run_plan(args, plan):
    timeout = float(plan.get("timeout", 3.0))
    out = {"connected": False, "streams": {}, "connection_terminated": None, "peer_settings": None}
    authority = f"{args.host}:{args.port}"
    names = {}
    Client.use_h3 = plan.get("h3", True)
    async with connect(args.host, args.port, configuration=make_config(), create_protocol=Client, wait_connected=False) as c:
        c.transmit()
        try:
            await asyncio.wait_for(c.wait_connected(), timeout)
        except Exception as e:
            out["error"] = f"handshake: {e!r}"
            return out
        out["connected"] = True
        for action in plan["actions"]:
            op = action["op"]
            if c.terminated is not None:
                break
            if op in ("uni", "bidi"):
                sid = c._quic.get_next_available_stream_id(is_unidirectional=(op == "uni"))
                c.stream(sid)
                names[action.get("name", f"s{sid}")] = sid
                c._quic.send_stream_data(sid, build(action.get("parts", []), sid), end_stream=action.get("fin", False))
            elif op in ("control", "encoder", "decoder"):
                sid = own_stream(c, op)
                c._quic.send_stream_data(sid, build(action.get("parts", []), sid), end_stream=action.get("fin", False))
            elif op == "reset":
                target = action["stream"]
                sid = own_stream(c, target) if target in ("control", "encoder", "decoder") else names[target]
                c._quic.reset_stream(sid, int(action.get("code", 0x10C)))
            elif op == "datagram":
                c._quic.send_datagram_frame(build(action.get("parts", []), 0))
            elif op == "request":
                sid = c._quic.get_next_available_stream_id()
                c.stream(sid)
                names[action["name"]] = sid
                c.h3.send_headers(
                    sid,
                    [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", authority.encode()), (b":path", action["path"].encode())],
                    end_stream=True,
                )
            elif op == "wait":
                c.transmit()
                target = action.get("name", "closed")
                ms = action.get("ms", timeout * 1000) / 1000
                if target == "closed":
                    await until(lambda: c.terminated is not None, ms)
                else:
                    s = c.stream(names[target])
                    await until(lambda: s.done() or c.terminated is not None, ms)
            elif op == "sleep":
                c.transmit()
                await asyncio.sleep(action["ms"] / 1000)
            c.transmit()
        if c.h3 is not None and c.h3._received_settings is not None:
            out["peer_settings"] = {str(int(k)): v for k, v in c.h3._received_settings.items()}
        out["streams"] = {name: c.streams[sid].result() for name, sid in names.items()}
        out["connection_terminated"] = c.terminated
        if c.terminated is None:
            c.close()
    return out


async def fresh_request(args, path, timeout):
    """A new connection's GET: proves the server still serves others."""
    Client.use_h3 = True
    async with connect(args.host, args.port, configuration=make_config(), create_protocol=Client) as c:
        sid = c._quic.get_next_available_stream_id()
        s = c.stream(sid)
        c.h3.send_headers(
            sid,
            [(b":method", b"GET"), (b":scheme", b"https"), (b":authority", f"{args.host}:{args.port}".encode()), (b":path", path.encode())],
            end_stream=True,
        )
        c.transmit()
        await until(lambda: s.done(), timeout)
        return s.status


async def run(args, plan):
    out = await run_plan(args, plan)
    if plan.get("fresh"):
        try:
            out["fresh_status"] = await asyncio.wait_for(fresh_request(args, plan["fresh"], 3.0), 5.0)
        except Exception as e:
            out["fresh_status"] = None
            out["fresh_error"] = repr(e)
    return out


if __name__ == "__main__":
    plan_main(run, __doc__)
