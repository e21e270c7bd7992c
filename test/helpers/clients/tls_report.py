"""What the aioquic clients (h3client.py, runner_client.py) report of a
connection's TLS: the chain the server presented, and a close as text
(a TLS alert by name). Shared, so both clients say it the same way."""

import hashlib

from aioquic.quic.packet import QuicErrorCode
from aioquic.tls import AlertDescription
from cryptography.hazmat.primitives.serialization import Encoding


def peer_chain_sha256(quic):
    """SHA-256 (hex) of the DER of each certificate the server presented,
    leaf first, as aioquic 1.7.2's TLS context keeps them (it parses the
    Certificate message before verifying it, so they are there after a
    failed verification too)."""
    tls = quic.tls
    leaf = getattr(tls, "_peer_certificate", None)
    if leaf is None:
        return []
    chain = [leaf] + list(getattr(tls, "_peer_certificate_chain", []))
    return [hashlib.sha256(c.public_bytes(Encoding.DER)).hexdigest() for c in chain]


def describe_close(event, closed_by):
    """A ConnectionTerminated as text: the code (a TLS alert by name: 0x100
    plus the alert, RFC 9001 section 4.8), the reason, and who sent it."""
    code, reason = event.error_code, event.reason_phrase
    if closed_by is None:
        # aioquic ends a connection it hears nothing from without any frame.
        return f"connection ended without a CONNECTION_CLOSE: {reason} (aioquic's code 0x{code:x})"
    name = ""
    if QuicErrorCode.CRYPTO_ERROR <= code <= QuicErrorCode.CRYPTO_ERROR + 0xFF:
        try:
            alert = AlertDescription(code - QuicErrorCode.CRYPTO_ERROR).name
        except ValueError:
            alert = str(code - QuicErrorCode.CRYPTO_ERROR)
        name = f" (TLS alert {alert})"
    elif event.frame_type is not None:  # a transport error (an application close has none)
        try:
            name = f" ({QuicErrorCode(code).name})"
        except ValueError:
            pass
    return f"connection closed: error 0x{code:x}{name} sent by {closed_by}: {reason or '(no reason)'}"
