#!/usr/bin/env bash
# Builds the load client (bench/setup.sh runs this) from a vendored copy of
# its modules with one change to quic-go's HTTP/3 client: a request body is
# copied to the stream in 64 KiB DATA frames instead of 8 KiB ones
# (http3/request_writer.go, bodyCopyBufferSize; quic-go has no option for
# it). With 8 KiB frames quic-go sends every frame as a GSO run of six
# packets followed by a 48-byte packet carrying the next frame's header
# alone: in W8's upload one datagram in seven was of that size, the client
# spent about 6 s of CPU per GiB (3.7 s with 64 KiB frames) and ran at
# 90-98 % of its core against h3-node, and both servers paid for the extra
# datagrams. 64 KiB is curl's default upload buffer
# (CURLOPT_UPLOAD_BUFFERSIZE). Only request bodies over 8 KiB change: W8's
# upload; W3's 4,096-byte bodies are one frame either way. bench/README.md,
# "W8's upload client", has the measurements.
set -euo pipefail
cd "$(dirname "$0")"
go mod vendor
f=vendor/github.com/quic-go/quic-go/http3/request_writer.go
sed -i 's/^const bodyCopyBufferSize = 8 \* 1024$/const bodyCopyBufferSize = 64 * 1024/' "$f"
grep -q '^const bodyCopyBufferSize = 64 \* 1024$' "$f" || {
  echo "bench/loadclient/build.sh: no 'const bodyCopyBufferSize = 8 * 1024' in $f to change (quic-go updated?)" >&2
  exit 1
}
go build -mod=vendor -o loadclient .
