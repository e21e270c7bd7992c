#!/usr/bin/env python3
"""Writes the committed seed corpus (fuzz/corpus/<target>/seed-*): valid
and near-valid inputs, so the fuzzers start deep inside each parser. Run
from anywhere: python3 fuzz/seeds/make_seeds.py"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "corpus")


def varint(v):
    if v < 0x40:
        return bytes([v])
    if v < 0x4000:
        return (0x4000 | v).to_bytes(2, "big")
    if v < 0x40000000:
        return (0x80000000 | v).to_bytes(4, "big")
    return (0xC000000000000000 | v).to_bytes(8, "big")


def frame(ty, payload):
    return varint(ty) + varint(len(payload)) + payload


def qstr(s, prefix_bits, flags):
    """QPACK/HPACK string literal without Huffman; length prefix of prefix_bits."""
    data = s.encode()
    top = (1 << prefix_bits) - 1
    n = len(data)
    if n < top:
        return bytes([flags | n]) + data
    out = [flags | top]
    n -= top
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out) + data


def static(i):  # indexed field line, static table (i < 64)
    return bytes([0xC0 | i])


def name_ref(i, value):  # literal with static name reference (i < 16)
    return bytes([0x50 | i]) + qstr(value, 7, 0)


def literal(name, value):  # literal with literal name
    return qstr(name, 3, 0x20) + qstr(value, 7, 0)


def block(*lines):
    return b"\x00\x00" + b"".join(lines)


GET = block(static(17), static(23), static(1), name_ref(0, "localhost"))
GET_SECRET = block(static(17), static(23), name_ref(1, "/secret"), name_ref(0, "localhost"),
                   literal("authorization", "Bearer h3-demo-token-2f9c"), name_ref(5, "session=h3-demo-7b41e0"))
POST = block(static(20), static(23), name_ref(1, "/upload"), name_ref(0, "localhost"), name_ref(4, "5"))
CONNECT_WT = block(static(15), static(23), name_ref(1, "/wt"), name_ref(0, "localhost"),
                   literal(":protocol", "webtransport"))
PLAIN_CONNECT = block(static(15), name_ref(0, "example.com:443"))
BAD = [
    block(static(23), static(1), name_ref(0, "localhost")),                     # no :method
    block(static(17), static(23), name_ref(0, "localhost")),                     # no :path
    block(static(17), literal("x-a", "1"), static(23), static(1)),               # pseudo after regular
    block(static(17), static(23), static(1), literal("X-Upper", "1")),           # uppercase name
    block(static(17), static(23), static(1), literal("connection", "close")),    # connection-specific
    block(static(17), static(23), static(1), literal("x-a", "a\r\nb")),          # CR LF in value
    b"\x02\x00\x80",                                                             # dynamic table reference
]

SETTINGS = frame(0x04, varint(0x06) + varint(16384) + varint(0x33) + varint(1))


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "seed-" + name), "wb") as f:
        f.write(data)


# frame_reader: context byte (bit 0: control), cap byte (cap = 1 + 4*b),
# split-count byte, split sizes, then the stream bytes.
write("frame_reader", "request", b"\x00\xff\x03\x01\x05\x02" + frame(1, GET) + frame(0, b"hello") + frame(1, b"\x00\x00"))
write("frame_reader", "request-grease", b"\x00\x10\x00" + frame(0x21, b"xx") + frame(1, GET) + frame(0x1F * 7 + 0x21, b"") + frame(0, b""))
write("frame_reader", "request-oversized", b"\x00\x01\x02\x03\x07" + frame(1, GET_SECRET) + frame(0, b"x" * 40))
write("frame_reader", "control", b"\x01\xff\x01\x02" + SETTINGS + frame(0x07, varint(0)) + frame(0x0D, varint(4)))
write("frame_reader", "control-data", b"\x01\xff\x00" + SETTINGS + frame(0, b"no"))
write("frame_reader", "reserved-h2", b"\x00\xff\x00" + frame(0x02, b"\x00"))

# request_validation: one HEADERS payload (a QPACK field section).
for name, data in [("get", GET), ("secret", GET_SECRET), ("post", POST), ("connect-wt", CONNECT_WT),
                   ("plain-connect", PLAIN_CONNECT)] + [("bad-%d" % i, b) for i, b in enumerate(BAD)]:
    write("request_validation", name, data)


# stream_classifier: flags (1 streamed, 2 webtransport, 4 client preamble),
# then operations: op (bits 0-2 kind, 3-5 slot, 6 fin), len, data.
def op(kind, slot, fin, data=b""):
    assert len(data) < 256
    return bytes([kind | (slot << 3) | (0x40 if fin else 0), len(data)]) + data


RESPOND, ACK = 5, 6
write("stream_classifier", "get", b"\x04" + op(0, 0, True, frame(1, GET)) + op(RESPOND, 0, False, b"ok"))
write("stream_classifier", "two-requests", b"\x04" + op(0, 0, False, frame(1, GET_SECRET)) + op(0, 1, True, frame(1, GET))
      + op(0, 0, True) + op(RESPOND, 1, False) + op(RESPOND, 0, False, b"done"))
write("stream_classifier", "post-streamed", b"\x05" + op(0, 0, False, frame(1, POST)) + op(ACK, 0, False)
      + op(0, 0, True, frame(0, b"hello")) + op(RESPOND, 0, False, b"5"))
write("stream_classifier", "post-reset", b"\x04" + op(0, 0, False, frame(1, POST) + frame(0, b"he")) + op(3, 0, True, b"\x0c"))
write("stream_classifier", "webtransport", b"\x06" + op(0, 0, False, frame(1, CONNECT_WT))
      + op(0, 1, True, varint(0x41) + varint(0) + b"echo me")
      + op(2, 3, True, varint(0x54) + varint(0) + b"uni data")
      + op(4, 0, False, varint(0) + b"datagram")
      + op(0, 0, True, frame(0, varint(0x2843) + varint(4) + b"\x00\x00\x00\x00")))
write("stream_classifier", "no-preamble-unknown-uni", b"\x00" + op(2, 4, False, varint(0x21) + b"grease stream")
      + op(0, 0, True, frame(1, GET)))
write("stream_classifier", "second-settings", b"\x04" + op(2, 0, False, SETTINGS))
write("stream_classifier", "plain-connect", b"\x04" + op(0, 0, True, frame(1, PLAIN_CONNECT)))
write("stream_classifier", "bad-request", b"\x04" + op(0, 0, True, frame(1, BAD[3])) + op(0, 1, True, frame(0, b"x")))
