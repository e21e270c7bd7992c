"""W7 datagram sender: one WebTransport session on aioquic, then COUNT
datagrams sent as fast as this client can, in bursts that let aioquic
coalesce several DATAGRAM frames per packet. Prints one JSON line:
{"status": 200, "sent": N, "seconds": s, "echoed": n}.
Usage: python bench/w7_datagrams.py --port P [--count 100000] [--size 32]
"""

import argparse
import asyncio
import json
import ssl
import time

from aioquic.asyncio.client import connect
from aioquic.asyncio.protocol import QuicConnectionProtocol
from aioquic.h3.connection import H3_ALPN, H3Connection
from aioquic.h3.events import DatagramReceived, HeadersReceived
from aioquic.quic.configuration import QuicConfiguration


class Client(QuicConnectionProtocol):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.h3 = H3Connection(self._quic, enable_webtransport=True)
        self.status = asyncio.get_running_loop().create_future()
        self.echoed = 0

    def quic_event_received(self, event):
        for ev in self.h3.handle_event(event):
            if isinstance(ev, HeadersReceived) and not self.status.done():
                self.status.set_result(dict(ev.headers).get(b":status", b"0").decode())
            elif isinstance(ev, DatagramReceived):
                self.echoed += 1


async def run(args):
    config = QuicConfiguration(is_client=True, alpn_protocols=H3_ALPN, max_datagram_frame_size=65536)
    config.verify_mode = ssl.CERT_NONE
    config.server_name = "localhost"
    async with connect(args.host, args.port, configuration=config, create_protocol=Client) as c:
        sid = c._quic.get_next_available_stream_id()
        c.h3.send_headers(
            sid,
            [
                (b":method", b"CONNECT"),
                (b":protocol", b"webtransport"),
                (b":scheme", b"https"),
                (b":authority", f"{args.host}:{args.port}".encode()),
                (b":path", b"/wt"),
            ],
            end_stream=False,
        )
        c.transmit()
        status = await asyncio.wait_for(c.status, 5)
        payload = b"d" * args.size
        start = time.monotonic()
        sent = 0
        while sent < args.count:
            for _ in range(min(args.burst, args.count - sent)):
                c.h3.send_datagram(sid, payload)
                sent += 1
            c.transmit()
            # Let ACKs and echoes in; aioquic sends only what its congestion
            # window allows, the rest waits in its queue.
            await asyncio.sleep(0)
        # Wait until aioquic has flushed its datagram queue.
        deadline = time.monotonic() + 10
        while c._quic._datagrams_pending and time.monotonic() < deadline:
            c.transmit()
            await asyncio.sleep(0.001)
        seconds = time.monotonic() - start
        await asyncio.sleep(0.3)
        print(json.dumps({"status": int(status), "sent": sent, "seconds": seconds, "echoed": c.echoed}))


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--count", type=int, default=100000)
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--burst", type=int, default=32)
    asyncio.run(run(p.parse_args()))


if __name__ == "__main__":
    main()
