"""QUIC-interop-runner-style HTTP/3 client on aioquic, for the project's tests.

Reads a JSON plan on stdin and prints ONE JSON result on stdout (exit code 0
whenever a result was printed). The plan is a list of connections, run one
after another (or up to `parallel` at once), each a new QUIC connection from
a new UDP socket, each GETting its paths all at once (or one after another:
sequential):

  {"host": "127.0.0.1", "port": 4433, "sni": "localhost", "chacha20": false,
   "timeout": 60, "parallel": 1,
   "connections": [{"paths": ["/1024"], "resume": false, "early_data": false,
                    "key_update": false, "migrate_after": 0, "bind": null,
                    "migrate_bind": null, "migrate_new_cid": true,
                    "sequential": false}]}

- parallel (plan, optional, default 1): run up to that many connections of
  the plan at once (a bounded pool; results stay in plan order). Ignored
  (one at a time) when any connection of the plan has resume or early_data,
  which need the ticket of the connection before.
- bind: the local IP address (IPv4 or IPv6; port 0) the connection's first
  socket binds to, instead of the wildcard. An IPv4 address is bound as its
  IPv4-mapped form on the dual-stack socket.
- sequential (default false): send each request once the response before it
  completed, instead of all at once. With migrate_after N the move then
  comes BETWEEN requests N and N+1: after N responses completed, before
  request N+1 is sent. (Not sequential, the move comes once N responses
  completed while the others are in flight: during a download when one is
  large.) With early_data only the first request goes as 0-RTT.
- resume: resume TLS with the session ticket the previous connection of the
  plan received (that connection is kept open until its ticket arrived).
- early_data: resume, and send the requests as 0-RTT, before the handshake
  completes.
- key_update: once the handshake is confirmed, start a 1-RTT key update, then
  send the requests. Reported true only when packets protected with the new
  keys went both ways: the server's were decrypted and ours were acknowledged.
- migrate_after: after that many responses completed, move the connection to
  a new local UDP socket (new source port; bound to migrate_bind when set,
  so a new address too, else the wildcard) and a new destination connection
  ID (unless migrate_new_cid is false). Nothing is sent from the old socket
  again; it keeps receiving for migrate_keep_old_ms (optional, default 1000;
  0 closes it at once, so whatever the server had in flight to the old port
  is lost and must be retransmitted), and is closed once the responses are done. Reported true
  only when the connection carried on from the new socket: datagrams arrived
  there, a PING sent from it (old socket closed) was acknowledged, and no
  response failed after the move. Before moving, what is already queued on
  the old socket is read (migrate_drain_old, optional, default true; false
  leaves it to be read after the first new-path packets, where aioquic's
  128-packet duplicate window drops most of it unacknowledged: a test of the
  server's loss recovery across the move).
- migrate_bind: with migrate_after, the local IP address the socket the
  connection moves to binds to (port 0): the client moves to a new address,
  not only a new port. Without it, the wildcard (a new port only).
- pause_before, pause_ms (sequential only): wait pause_ms milliseconds
  before sending request number pause_before (0-based, at least 1), with
  the connection open and idle (for a test that restarts a server meanwhile).
- migrate_new_cid (default true): false moves without changing the
  destination connection ID (change_connection_id is not called), as a NAT
  rebinding looks to the server.
- chacha20: offer TLS_CHACHA20_POLY1305_SHA256 only.
- ca (plan, optional): a PEM file of CAs; every connection then verifies the
  server's chain against them and the leaf's name against sni, and a
  failure fails its handshake. Without it nothing is verified.
- client_cert, client_key (plan, optional): PEM files of a client
  certificate (chain) and its key, sent when the server asks for one. One
  the server refuses is refused after the client's side of the TLS 1.3
  handshake completed: handshake is then true and the error carries the
  server's alert (certificate_required is 0x174).

Result:

  {"connections": [{"handshake": true, "resumed": false,
                    "early_data_accepted": null, "cipher": "TLS_AES_128_GCM_SHA256",
                    "key_updated": null, "migrated": null,
                    "peer_addresses": ["127.0.0.1:4433"],
                    "peer_chain_sha256": ["..."], "error": null}],
   "responses": [{"connection": 0, "path": "/1024", "status": 200,
                  "length": 1024, "sha256": "...", "error": null}],
   "error": null}

peer_addresses: the sorted, distinct source addresses ("ip:port"; IPv6 in
brackets, "[fd00::1]:4433"; an IPv4-mapped address as plain IPv4) of every
datagram the connection received, on every socket it used (the first and
the one it moved to), as recvfrom reported them: whether the server answered
from the address the client sent to.

peer_chain_sha256: what the server presented, the SHA-256 (lowercase hex) of
each certificate's DER, leaf first, also when the handshake then failed
(a wrong ca); empty when no Certificate message came (a resumed session has
none). A failed handshake's error says how the connection closed: the code
(a TLS alert by name), the reason, and which side sent it ("handshake
failed: connection closed: error 0x12a (TLS alert bad_certificate) sent by
this client: ...").

One response entry per planned path, in plan order, even for connections that
never ran (their error says why). Bodies are hashed as they arrive, never
kept. On the plan's timeout, what was reached is printed with error "timeout".
"""

import asyncio
import hashlib
import ipaddress
import json
import os
import socket
import ssl
import sys
import time
import traceback

from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DataReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection
from aioquic.quic.events import ConnectionTerminated, StreamReset
from aioquic.quic.logger import QuicFileLogger
from aioquic.quic.packet_builder import QuicDeliveryState
from aioquic.tls import CipherSuite, Epoch, load_pem_x509_certificates
from tls_report import describe_close, peer_chain_sha256

H3_NO_ERROR = 0x100

# Receive windows large enough that a 10 MiB+ download is not throttled by
# MAX_STREAM_DATA round trips (aioquic's defaults are 1 MiB).
MAX_STREAM_DATA = 8 * 1024 * 1024
MAX_DATA = 32 * 1024 * 1024
# SO_RCVBUF (the kernel caps it at net.core.rmem_max). The default (~208 KiB)
# overflows on loopback while aioquic (slow, in Python) reads; much larger
# lets the server's window grow into a deep queue that slows a 10 MiB
# download down (8 MiB: ~1.5 s against ~0.9 s here).
RECEIVE_BUFFER = 1024 * 1024

# How long to wait, at most, for the NewSessionTicket a later connection of
# the plan resumes with, and for a PING's acknowledgement.
TICKET_WAIT = 3.0
PING_WAIT = 3.0

# After a migration the old socket sends nothing more but keeps receiving
# this long (what the server still had in flight to the old address), as a
# client whose old network is still up would (plan: migrate_keep_old_ms; 0
# closes it at once, like a NAT rebinding that drops the old mapping).
DEFAULT_KEEP_OLD_MS = 1000


def format_addr(addr):
    """A socket address as "ip:port": an IPv4-mapped IPv6 address as plain
    IPv4, IPv6 in brackets ("[fd00::1]:4433"), a scope kept ("%eth0")."""
    host, port = str(addr[0]), int(addr[1])
    scope = ""
    if "%" in host:
        host, scope = host.split("%", 1)
        scope = "%" + scope
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return f"{host}{scope}:{port}"
    if ip.version == 6 and ip.ipv4_mapped is not None:
        return f"{ip.ipv4_mapped}:{port}"
    if ip.version == 6:
        return f"[{ip}{scope}]:{port}"
    return f"{ip}:{port}"


def cipher_name(suite):
    try:
        return "TLS_" + CipherSuite(suite).name
    except Exception:
        return None if suite is None else f"0x{int(suite):04x}"


def load_identity_checks(plan):
    """The plan's ca (PEM bytes) and client certificate ((certificate,
    chain, key) as aioquic's configuration holds them), read and parsed once
    up front, so that a bad file fails the plan instead of a handshake
    inside aioquic's packet handling."""
    cadata = None
    client = None
    try:
        if plan.get("ca"):
            with open(plan["ca"], "rb") as f:
                cadata = f.read()
            if not load_pem_x509_certificates(cadata):
                raise ValueError(f"no certificate in {plan['ca']}")
        if plan.get("client_cert"):
            c = QuicConfiguration(is_client=True)
            c.load_cert_chain(plan["client_cert"], plan.get("client_key"))
            client = (c.certificate, c.certificate_chain, c.private_key)
    except Exception as e:
        raise ValueError(f"cannot load the plan's ca / client_cert / client_key: {type(e).__name__}: {e}") from e
    return cadata, client


class Response:
    """One planned GET: what came back, with the body hashed, not kept."""

    def __init__(self, conn_index, path):
        self.conn_index = conn_index
        self.path = path
        self.status = None
        self.length = 0
        self.sha = hashlib.sha256()
        self.error = None
        self.ended = False
        self.after_migration = False
        self.done = None  # a future, once the request is sent

    def finish(self, error=None):
        if self.error is None and error is not None and not self.ended:
            self.error = error
        if self.done is not None and not self.done.done():
            self.done.set_result(None)

    def is_finished(self):
        return self.ended or self.error is not None

    def to_json(self):
        return {
            "connection": self.conn_index,
            "path": self.path,
            "status": self.status,
            "length": self.length,
            "sha256": self.sha.hexdigest(),
            "error": self.error,
        }


class SocketProxy(asyncio.DatagramProtocol):
    """The protocol of the socket a connection migrates to: counts what
    arrives there and hands it to the connection."""

    def __init__(self, client):
        self.client = client
        self.transport = None
        self.received = 0

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, addr):
        self.received += 1
        self.client.datagram_received(data, addr)

    def error_received(self, exc):
        pass

    def connection_lost(self, exc):
        pass


class Client(QuicConnectionProtocol):
    def __init__(self, quic, conn_index, peers):
        super().__init__(quic)
        self.conn_index = conn_index
        # The source address (host, port) of every datagram received, on any
        # socket (the first, the one moved to: SocketProxy hands its
        # datagrams here).
        self.peers = peers
        # Made once the connection started (start_h3): with a session ticket
        # the remembered stream limits then let the control and QPACK streams
        # go out in 0-RTT with the requests.
        self.h3 = None
        self.exchanges = {}
        self.completed = 0
        self.closing = False
        self.terminated = None
        self.terminated_event = None
        # Which side began the close ("the server", "this client"; None: no
        # CONNECTION_CLOSE, an idle timeout): aioquic's ConnectionTerminated
        # does not say, its _close_begin does (is_initiator).
        self.closed_by = None
        close_begin = quic._close_begin

        def note_close_begin(is_initiator, now):
            self.closed_by = "this client" if is_initiator else "the server"
            close_begin(is_initiator=is_initiator, now=now)

        quic._close_begin = note_close_begin
        # Migration
        self.migrate_after = 0
        self.migrate_auto = True  # move from response_done (not sequential)
        self.new_cid = True  # a new destination connection ID with the move
        self.keep_old = 0.0  # seconds the old socket still receives after the move
        self.spare = None  # (transport, SocketProxy) prepared in advance
        self.old_transport = None
        self.old_close_timer = None
        self.migrate_scheduled = False
        self.migrated_switch = False
        self.migrate_error = None
        self.old_sock = None  # the first socket, read directly when moving off it
        self.drain_old = True
        # Key update bookkeeping (see watch_key_update)
        self.ku_phase = None
        self.ku_first_sent = None
        self.ku_received = 0

    def connection_lost(self, exc):
        pass  # the old socket of a migration closes; the connection lives on

    def datagram_received(self, data, addr):
        self.peers.add(addr[:2])  # formatted for the result (format_addr)
        super().datagram_received(data, addr)

    def error_received(self, exc):
        pass

    # Requests

    def send_request(self, resp, authority):
        stream_id = self._quic.get_next_available_stream_id()
        resp.done = self._loop.create_future()
        resp.after_migration = self.migrated_switch
        self.exchanges[stream_id] = resp
        try:
            self.h3.send_headers(
                stream_id,
                [
                    (b":method", b"GET"),
                    (b":scheme", b"https"),
                    (b":authority", authority.encode()),
                    (b":path", resp.path.encode("latin-1")),
                ],
                end_stream=True,
            )
        except Exception as e:
            resp.finish(f"send failed: {e!r}")

    # Events

    def quic_event_received(self, event):
        if isinstance(event, ConnectionTerminated):
            if not self.closing:
                self.terminated = {"error_code": event.error_code, "reason": event.reason_phrase}
                self.terminated_event = event
            for resp in self.exchanges.values():
                resp.finish(
                    "connection closed"
                    if self.closing
                    else f"connection terminated: 0x{event.error_code:x} {event.reason_phrase}".rstrip()
                )
        elif isinstance(event, StreamReset):
            resp = self.exchanges.get(event.stream_id)
            if resp is not None and not resp.ended:
                resp.finish(f"stream reset: 0x{event.error_code:x}")
                self.response_done()
        if self.h3 is None:
            return
        try:
            h3_events = self.h3.handle_event(event)
        except Exception as e:  # a protocol violation, as aioquic sees it
            for resp in self.exchanges.values():
                resp.finish(f"h3 error: {e!r}")
            return
        for ev in h3_events:
            resp = self.exchanges.get(getattr(ev, "stream_id", None))
            if resp is None or resp.is_finished():
                continue
            if isinstance(ev, HeadersReceived):
                if resp.status is None:
                    for n, v in ev.headers:
                        if n == b":status":
                            try:
                                resp.status = int(v)
                            except ValueError:
                                resp.error = f"bad :status {v!r}"
            elif isinstance(ev, DataReceived):
                resp.length += len(ev.data)
                resp.sha.update(ev.data)
            if getattr(ev, "stream_ended", False):
                resp.ended = True
                resp.finish()
                self.response_done()

    def response_done(self):
        self.completed += 1
        if self.migrate_auto and self.migrate_after and not self.migrate_scheduled and self.completed >= self.migrate_after:
            # Not from inside aioquic's event processing: migrate() reads
            # the old socket dry first, which hands out events of its own.
            self.migrate_scheduled = True
            self._loop.call_soon(self.migrate)

    # Migration

    def drain_old_socket(self):
        """Takes in everything already queued on the old socket, sending
        nothing back meanwhile (so the server, out of acknowledgements, stops
        adding to it). aioquic counts a packet more than 128 numbers below
        the highest one seen as a duplicate: read after the first packets
        from the new path, this backlog (a slow Python reader builds one up)
        would be dropped unacknowledged."""
        sock = self.old_sock
        if sock is None:
            return
        end = time.monotonic() + 2.0
        while time.monotonic() < end:
            try:
                data, addr = sock.recvfrom(65536)
            except (BlockingIOError, InterruptedError):
                break
            except OSError:
                break
            self.peers.add(addr[:2])
            self._quic.receive_datagram(data, addr, now=self._loop.time())
            self._process_events()

    def migrate(self):
        """Moves the connection onto the spare socket: new source port (and
        address, with migrate_bind), next destination connection ID (unless
        new_cid is false: a NAT rebinding). What is already queued on the old socket
        is read first; nothing is sent from it again, and it still receives
        for `keep_old` seconds (what the server had in flight to it), then
        closes."""
        if self.migrated_switch:
            return
        self.migrated_switch = True
        self.migrate_scheduled = True
        if self.spare is None:
            self.migrate_error = self.migrate_error or "no spare socket"
            return
        if self._quic._state.name not in ("CONNECTED",):
            self.migrate_error = f"connection {self._quic._state.name.lower()} before the move"
            return
        if self.drain_old:
            self.drain_old_socket()
        transport, _ = self.spare
        self.old_transport = self._transport
        self._transport = transport
        if self.new_cid:
            try:
                self._quic.change_connection_id()
            except Exception as e:
                self.migrate_error = f"change_connection_id failed: {e!r}"
        for resp in self.exchanges.values():
            if not resp.is_finished():
                resp.after_migration = True
        if self.keep_old > 0:
            self.old_close_timer = self._loop.call_later(self.keep_old, self.close_old)
        else:
            self.close_old()
        self.transmit()

    def close_old(self):
        if self.old_close_timer is not None:
            self.old_close_timer.cancel()
            self.old_close_timer = None
        if self.old_transport is not None:
            self.old_transport.close()

    # Key update

    def watch_key_update(self):
        """Wraps the 1-RTT CryptoPair: notes the first packet number sent
        with the new key phase and counts short-header packets received and
        decrypted in it."""
        pair = self._quic._cryptos[Epoch.ONE_RTT]
        self.ku_phase = int(not pair.recv.key_phase)
        orig_encrypt = pair.encrypt_packet
        orig_decrypt = pair.decrypt_packet

        def encrypt_packet(plain_header, plain_payload, packet_number):
            out = orig_encrypt(plain_header, plain_payload, packet_number)
            if self.ku_first_sent is None and pair.send.key_phase == self.ku_phase:
                self.ku_first_sent = packet_number
            return out

        def decrypt_packet(packet, encrypted_offset, expected_packet_number):
            plain_header, payload, packet_number = orig_decrypt(packet, encrypted_offset, expected_packet_number)
            first = plain_header[0]
            if not first & 0x80 and (first & 0x04) >> 2 == self.ku_phase:
                self.ku_received += 1
            return plain_header, payload, packet_number

        pair.encrypt_packet = encrypt_packet
        pair.decrypt_packet = decrypt_packet

    def key_update_done(self):
        if self.ku_first_sent is None or self.ku_received == 0:
            return False
        space = self._quic._spaces[Epoch.ONE_RTT]
        return space.largest_acked_packet >= self.ku_first_sent


def resend_0rtt_after_retry(quic):
    """aioquic answers a Retry by starting over with fresh packet spaces,
    forgetting the 0-RTT packets already sent: their stream data (the
    requests, and the H3 control stream's SETTINGS) would count as sent and
    never go out again, so the requests would hang. Marks every stream's
    sent data as lost after a Retry, so it goes out again (as 0-RTT with the
    new Initial, the server having discarded the first)."""
    orig = quic._receive_retry_packet

    def receive_retry_packet(*args, **kwargs):
        before = quic._retry_count
        orig(*args, **kwargs)
        if quic._retry_count == before:
            return
        for stream in quic._streams.values():
            sender = stream.sender
            stop = sender.highest_offset
            fin = sender._buffer_fin is not None and stop == sender._buffer_fin and not sender._pending_eof
            if stop > sender._buffer_start or fin:
                sender.on_data_delivery(QuicDeliveryState.LOST, sender._buffer_start, stop, fin)

    quic._receive_retry_packet = receive_retry_packet


def big_receive_buffer(sock):
    """aioquic reads slowly next to a server's bursts: with the default
    receive buffer the kernel drops datagrams on loopback (RcvbufErrors)."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)
    except OSError:
        pass


def make_socket(addr, bind=None):
    """A UDP socket for reaching `addr` (from getaddrinfo). Like aioquic's
    connect(): dual-stack IPv6, IPv4 peers as mapped addresses; plain IPv4
    when IPv6 sockets are not available. Bound to the wildcard, or to `bind`
    (an IP address; port 0), an IPv4 one as its mapped form. Returns
    (socket, peer address)."""
    ip, port = addr[0], addr[1]
    local = ipaddress.ip_address(bind) if bind else None
    if local is not None and local.version == 6 and local.ipv4_mapped is not None:
        local = local.ipv4_mapped
    if local is not None and (local.version == 6) != (":" in ip):
        raise ValueError(f"bind address {local} is not of the server's family ({ip})")
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    except OSError:
        if ":" in ip or (local is not None and local.version == 6):
            raise
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            big_receive_buffer(sock)
            sock.bind((str(local) if local is not None else "0.0.0.0", 0))
        except Exception:
            sock.close()
            raise
        return sock, (ip, port)
    if local is None:
        here = "::"
    elif local.version == 4:
        here = f"::ffff:{local}"
    else:
        here = str(local)
    try:
        sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        big_receive_buffer(sock)
        sock.bind((here, 0, 0, 0))
    except Exception:
        sock.close()
        raise
    if ":" not in ip:
        return sock, ("::ffff:" + ip, port, 0, 0)
    return sock, (ip, port, addr[2] if len(addr) > 2 else 0, addr[3] if len(addr) > 3 else 0)


async def wait_until(predicate, timeout, step=0.005):
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() >= end:
            return False
        await asyncio.sleep(step)
    return True


class Runner:
    def __init__(self, plan):
        self.plan = plan
        self.host = str(plan.get("host", "127.0.0.1"))
        self.port = int(plan["port"])
        self.sni = str(plan.get("sni", "localhost"))
        self.chacha20 = bool(plan.get("chacha20", False))
        self.specs = plan["connections"]
        self.conns = []
        self.responses = []
        for i, spec in enumerate(self.specs):
            self.conns.append(
                {
                    "handshake": False,
                    "resumed": False,
                    "early_data_accepted": None,
                    "cipher": None,
                    "key_updated": None if not spec.get("key_update") else False,
                    "migrated": None if not int(spec.get("migrate_after", 0) or 0) else False,
                    "peer_addresses": [],
                    "peer_chain_sha256": [],
                    "error": None,
                }
            )
            self.responses.append([Response(i, str(p)) for p in spec.get("paths", [])])
        self.started = [False] * len(self.specs)
        self.peers = [set() for _ in self.specs]  # per connection, see Client.peers
        # Connections at once: ignored when a connection resumes (it needs
        # the ticket of the one before it).
        self.parallel = max(1, int(plan.get("parallel", 1) or 1))
        if any(spec.get("resume") or spec.get("early_data") for spec in self.specs):
            self.parallel = 1
        self.ticket = None
        self.transports = []  # every socket opened, closed at the end
        # ca and client_cert/client_key, loaded by run (load_identity_checks).
        self.cadata = None
        self.client_identity = None

    def result(self, error=None):
        for i, out in enumerate(self.conns):
            out["peer_addresses"] = sorted({format_addr(a) for a in self.peers[i]})
            if not self.started[i] and out["error"] is None:
                out["error"] = error or "not started"
            for resp in self.responses[i]:
                if not resp.is_finished():
                    resp.error = (error or "not completed") if self.started[i] else (error or "not started")
        return {
            "connections": self.conns,
            "responses": [r.to_json() for rs in self.responses for r in rs],
            "error": error,
        }

    def close_all(self):
        for t in self.transports:
            try:
                t.close()
            except Exception:
                pass

    async def run(self):
        self.cadata, self.client_identity = load_identity_checks(self.plan)
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(self.host, self.port, type=socket.SOCK_DGRAM)
        addr = infos[0][4]
        if self.parallel > 1:
            # A bounded pool; no connection resumes (see __init__).
            pool = asyncio.Semaphore(self.parallel)

            async def one(i, spec):
                async with pool:
                    await self.start_connection(i, spec, addr, None)

            await asyncio.gather(*(one(i, spec) for i, spec in enumerate(self.specs)))
            return
        for i, spec in enumerate(self.specs):
            ticket, self.ticket = self.ticket, None
            await self.start_connection(i, spec, addr, ticket)

    async def start_connection(self, i, spec, addr, ticket):
        self.started[i] = True
        try:
            await self.run_connection(i, spec, addr, ticket)
        except Exception as e:
            out = self.conns[i]
            out["error"] = out["error"] or f"client error: {e!r}"
            for resp in self.responses[i]:
                resp.finish(f"client error: {e!r}")

    def needs_ticket(self, i):
        if i + 1 >= len(self.specs):
            return False
        nxt = self.specs[i + 1]
        return bool(nxt.get("resume") or nxt.get("early_data"))

    async def run_connection(self, i, spec, addr, ticket):
        loop = asyncio.get_running_loop()
        out = self.conns[i]
        responses = self.responses[i]
        resume = bool(spec.get("resume") or spec.get("early_data"))
        early = bool(spec.get("early_data"))
        key_update = bool(spec.get("key_update"))
        migrate_after = int(spec.get("migrate_after", 0) or 0)
        keep_old_ms = float(spec.get("migrate_keep_old_ms", DEFAULT_KEEP_OLD_MS))
        bind = spec.get("bind") or None
        migrate_bind = spec.get("migrate_bind") or None
        new_cid = spec.get("migrate_new_cid", True)
        new_cid = True if new_cid is None else bool(new_cid)
        sequential = bool(spec.get("sequential", False))
        pause_before = int(spec.get("pause_before", 0) or 0)
        pause_s = max(0.0, float(spec.get("pause_ms", 0) or 0)) / 1000.0
        errors = []

        config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN)
        config.server_name = self.sni
        if self.cadata is not None:
            # The chain against these CAs, the leaf's name against sni.
            config.verify_mode = ssl.CERT_REQUIRED
            config.load_verify_locations(cadata=self.cadata)
        else:
            config.verify_mode = ssl.CERT_NONE
        if self.client_identity is not None:
            # Sent only if the server asks (CertificateRequest).
            config.certificate, config.certificate_chain, config.private_key = self.client_identity
        config.max_data = MAX_DATA
        config.max_stream_data = MAX_STREAM_DATA
        if self.chacha20:
            config.cipher_suites = [CipherSuite.CHACHA20_POLY1305_SHA256]
        # For debugging a case: the client's own qlog, one file per connection.
        if os.environ.get("H3_RUNNER_CLIENT_QLOG"):
            config.quic_logger = QuicFileLogger(os.environ["H3_RUNNER_CLIENT_QLOG"])
        if resume:
            if ticket is None:
                errors.append("no session ticket from the previous connection")
            else:
                config.session_ticket = ticket
        zero_rtt = early and ticket is not None
        if early:
            out["early_data_accepted"] = False

        tickets = []
        quic = QuicConnection(configuration=config, session_ticket_handler=tickets.append)
        if zero_rtt:
            resend_0rtt_after_retry(quic)
        sock, peer = make_socket(addr, bind)
        transport, client = await loop.create_datagram_endpoint(lambda: Client(quic, i, self.peers[i]), sock=sock)
        self.transports.append(transport)
        if migrate_after > 0:
            try:
                sock2, _ = make_socket(addr, migrate_bind)
            except Exception as e:
                # migrate() reports it: the connection stays where it is.
                client.migrate_error = f"socket to move to: {e}"
            else:
                t2, proxy = await loop.create_datagram_endpoint(lambda: SocketProxy(client), sock=sock2)
                self.transports.append(t2)
                client.spare = (t2, proxy)
            client.migrate_after = migrate_after
            client.migrate_auto = not sequential
            client.new_cid = new_cid
            client.old_sock = sock
            client.drain_old = bool(spec.get("migrate_drain_old", True))
            client.keep_old = max(0.0, keep_old_ms) / 1000.0
        authority = f"{self.sni}:{self.port}"
        cancelled = False

        try:
            client.connect(peer, transmit=False)
            client.h3 = H3Connection(quic)
            if zero_rtt:
                # Before the handshake: these go out as 0-RTT, right after the
                # Initial (sequential: the first only).
                for resp in responses[:1] if sequential else responses:
                    client.send_request(resp, authority)
            client.transmit()
            try:
                await client.wait_connected()
            except Exception as e:
                out["peer_chain_sha256"] = peer_chain_sha256(quic)
                errors.append(
                    "handshake failed: "
                    + (describe_close(client.terminated_event, client.closed_by) if client.terminated_event else repr(e))
                )
                for resp in responses:
                    resp.finish("handshake failed")
                return
            tls = quic.tls
            out["handshake"] = True
            out["peer_chain_sha256"] = peer_chain_sha256(quic)
            out["resumed"] = bool(tls.session_resumed)
            if early:
                out["early_data_accepted"] = bool(tls.early_data_accepted)
            out["cipher"] = cipher_name(tls.key_schedule.cipher_suite if tls.key_schedule else None)

            if key_update:
                # RFC 9001 6.1: not before the handshake is confirmed (HANDSHAKE_DONE).
                if not await wait_until(lambda: quic._handshake_confirmed, 5.0):
                    errors.append("handshake not confirmed within 5 s; key update deferred")
                client.watch_key_update()
                client.request_key_update()

            if sequential:
                # Each request once the response before it completed; the
                # move (migrate_after N) after response N, before request N+1.
                for k, resp in enumerate(responses):
                    if k > 0 and k == pause_before:
                        await asyncio.sleep(pause_s)
                    if k > 0 and k == migrate_after and not client.migrated_switch:
                        client.migrate()
                    if k > 0 or not zero_rtt:
                        if quic._state.name in ("CLOSING", "DRAINING", "TERMINATED"):
                            resp.finish("connection closed before the request was sent")
                            continue
                        client.send_request(resp, authority)
                        client.transmit()
                    await asyncio.shield(resp.done)
            else:
                if not zero_rtt:
                    for resp in responses:
                        client.send_request(resp, authority)
                    client.transmit()

                if responses:
                    await asyncio.gather(*(asyncio.shield(r.done) for r in responses))

            if key_update:
                if not client.key_update_done() and client.terminated is None:
                    # Make sure something in the new phase is acknowledged.
                    try:
                        await asyncio.wait_for(client.ping(), PING_WAIT)
                    except Exception:
                        pass
                    await wait_until(client.key_update_done, 1.0)
                out["key_updated"] = client.key_update_done()
                if not out["key_updated"]:
                    errors.append(
                        f"key update not confirmed (first packet in new phase: {client.ku_first_sent}, "
                        f"packets received in it: {client.ku_received})"
                    )

            if migrate_after > 0:
                if not client.migrated_switch and client.terminated is None:
                    # Fewer responses than migrate_after completed: move now.
                    client.migrate()
                # From here on only the new socket exists: the PING proves
                # the connection lives there.
                client.close_old()
                ping_ok = False
                if client.terminated is None:
                    try:
                        await asyncio.wait_for(client.ping(), PING_WAIT)
                        ping_ok = True
                    except Exception:
                        pass
                proxy = client.spare[1] if client.spare else None
                received = proxy.received if proxy else 0
                failed_after = [r for r in responses if r.after_migration and r.error is not None]
                out["migrated"] = bool(
                    client.migrated_switch and client.migrate_error is None and ping_ok and received > 0 and not failed_after
                )
                if not out["migrated"]:
                    errors.append(
                        f"migration failed: {client.migrate_error + '; ' if client.migrate_error else ''}ping acknowledged={ping_ok}, "
                        f"datagrams on the new socket={received}, responses failed after the move={len(failed_after)}"
                    )

            if self.needs_ticket(i):
                if not await wait_until(lambda: bool(tickets) or client.terminated is not None, TICKET_WAIT):
                    errors.append("no session ticket received")
            if tickets:
                self.ticket = tickets[-1]

            if client.terminated_event is not None:
                errors.append(f"connection terminated: {describe_close(client.terminated_event, client.closed_by)}")
        except asyncio.CancelledError:
            cancelled = True
            errors.append("timeout")
            raise
        finally:
            for resp in responses:
                if not resp.is_finished():
                    resp.finish("timeout" if cancelled else "not completed")
            if errors:
                out["error"] = "; ".join(e.strip() for e in errors)
            if tickets and self.ticket is None:
                self.ticket = tickets[-1]
            if client.terminated is None and not client.closing:
                client.closing = True
                try:
                    client.close(error_code=H3_NO_ERROR)
                    await asyncio.wait_for(client.wait_closed(), 0.5 if cancelled else 2.0)
                except BaseException:
                    pass
            transport.close()
            if client.spare:
                client.spare[0].close()


def validate(plan):
    if not isinstance(plan, dict):
        raise ValueError("the plan must be a JSON object")
    if "port" not in plan:
        raise ValueError("plan.port is required")
    int(plan["port"])
    if not isinstance(plan.get("connections"), list):
        raise ValueError("plan.connections must be a list")
    for c in plan["connections"]:
        if not isinstance(c, dict) or not isinstance(c.get("paths", []), list):
            raise ValueError("each connection must be an object with a list of paths")


async def amain(plan):
    runner = Runner(plan)
    timeout = float(plan.get("timeout", 60))
    try:
        await asyncio.wait_for(runner.run(), timeout)
        return runner.result()
    except asyncio.TimeoutError:
        return runner.result("timeout")
    except Exception as e:
        return runner.result(f"client error: {e!r}")
    finally:
        runner.close_all()


def main():
    try:
        plan = json.load(sys.stdin)
        validate(plan)
    except Exception as e:
        print(json.dumps({"connections": [], "responses": [], "error": f"invalid plan: {e}"}), flush=True)
        return
    try:
        result = asyncio.run(amain(plan))
    except BaseException as e:  # never a traceback instead of JSON
        traceback.print_exc(file=sys.stderr)
        result = {"connections": [], "responses": [], "error": f"client error: {e!r}"}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
