"""Decodes QPACK field sections with pylsqpack (aioquic's QPACK, independent
of quiche's). Reads a JSON list of hex strings on stdin and prints a JSON
list of [[name, value], ...] per section; a section that does not decode
gives {"error": "..."}. Used to read HEADERS frames that tshark found in a
decrypted capture (Wireshark 4.0 shows HEADERS payloads but not their fields).
"""
import json
import sys

import pylsqpack


def main() -> None:
    sections = json.load(sys.stdin)
    out = []
    for i, section in enumerate(sections):
        # A fresh decoder per section: both peers advertise a zero-capacity
        # dynamic table, so every section stands alone.
        decoder = pylsqpack.Decoder(4096, 16)
        try:
            _, headers = decoder.feed_header(i * 4, bytes.fromhex(section))
            out.append([[n.decode(), v.decode()] for n, v in headers])
        except Exception as e:  # noqa: BLE001 - reported to the test as data
            out.append({"error": f"{type(e).__name__}: {e}"})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
