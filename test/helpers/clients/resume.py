"""Resumption across servers with aioquic: connects to --first, keeps the
session ticket the server sends, then connects to --second with it. Prints
one JSON line: whether a ticket arrived and whether the second handshake
resumed the session (TLS 1.3 PSK)."""
import argparse
import asyncio
import json
import ssl

from aioquic.asyncio.client import connect
from aioquic.quic.configuration import QuicConfiguration


async def handshake(port, ticket=None, on_ticket=None):
    config = QuicConfiguration(is_client=True, alpn_protocols=["h3"])
    config.verify_mode = ssl.CERT_NONE
    config.server_name = "localhost"
    if ticket is not None:
        config.session_ticket = ticket
    async with connect("127.0.0.1", port, configuration=config, session_ticket_handler=on_ticket, wait_connected=True) as client:
        await client.ping()
        # The ticket comes after the handshake; give it a moment.
        await asyncio.sleep(0.2)
        return client._quic.tls.session_resumed


async def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--first", type=int, required=True)
    p.add_argument("--second", type=int, required=True)
    args = p.parse_args()
    tickets = []
    await asyncio.wait_for(handshake(args.first, on_ticket=tickets.append), 10)
    resumed = False
    if tickets:
        resumed = await asyncio.wait_for(handshake(args.second, ticket=tickets[-1]), 10)
    print(json.dumps({"ticket": bool(tickets), "resumed": bool(resumed)}))


asyncio.run(main())
