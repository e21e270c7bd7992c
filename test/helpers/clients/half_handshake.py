"""Starts QUIC handshakes and abandons them: for each of N clients, a fresh
UDP socket sends aioquic's first flight (a real, well-formed Initial with a
TLS ClientHello) and nothing more, ever. The server answers and then waits
for a handshake that never completes, which is what the handshake timeout
is for. With --hold S the sockets stay open S seconds (so the server's
answers have somewhere to go) before the script exits; it prints one JSON
line: how many Initials went out and how many sockets got any answer."""
import argparse
import json
import select
import socket
import ssl
import time

from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.connection import QuicConnection


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=1)
    p.add_argument("--hold", type=float, default=0.5)
    args = p.parse_args()
    addr = (args.host, args.port)
    socks = []
    sent = 0
    for _ in range(args.count):
        config = QuicConfiguration(is_client=True, alpn_protocols=["h3"])
        config.verify_mode = ssl.CERT_NONE
        config.server_name = "localhost"
        conn = QuicConnection(configuration=config)
        now = time.time()
        conn.connect(addr, now=now)
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setblocking(False)
        for data, _ in conn.datagrams_to_send(now=now):
            s.sendto(data, addr)
            sent += 1
        socks.append(s)
    answered = set()
    deadline = time.monotonic() + args.hold
    while time.monotonic() < deadline:
        ready, _, _ = select.select(socks, [], [], max(0.0, deadline - time.monotonic()))
        for s in ready:
            try:
                while s.recv(65536):
                    answered.add(s.fileno())
            except BlockingIOError:
                pass
    print(json.dumps({"initials_sent": sent, "clients": args.count, "answered": len(answered)}))
    for s in socks:
        s.close()


if __name__ == "__main__":
    main()
