// quic-go (Go): its http3 client and webtransport-go, in one binary built
// from quicgo/ (scripts/setup-go.sh builds it ahead of time; the first use
// builds it when it is older than its sources). `quicgo-interop` runs a
// request plan; `quicgo-interop runner` an interop-runner plan.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { CLIENTS } from '../paths';
import { runJsonProcess } from '../process';
import { BODY_KEEP, DEFAULT_TIMEOUT_MS, H3Client, RunnerResult } from './adapter';

const QUICGO_DIR = path.join(CLIENTS, 'quicgo');
export const QUICGO_BIN = path.join(QUICGO_DIR, '.bin', 'quicgo-interop');

function goModVersion(module: string): string {
  const mod = fs.readFileSync(path.join(QUICGO_DIR, 'go.mod'), 'utf8');
  return mod.match(new RegExp(`${module.replace(/[/.]/g, '\\$&')} (v\\S+)`))?.[1] ?? '?';
}

/**
 * The client binary: $H3_QUICGO_BIN when set, else the project's, built
 * unless an up-to-date one exists.
 */
export function quicGoBinary(): string {
  const bin = process.env.H3_QUICGO_BIN;
  if (bin) return bin;
  const files = fs.readdirSync(QUICGO_DIR).filter((f) => f.endsWith('.go') || f === 'go.mod' || f === 'go.sum');
  const sources = files.map((f) => fs.statSync(path.join(QUICGO_DIR, f)).mtimeMs);
  if (!fs.existsSync(QUICGO_BIN) || fs.statSync(QUICGO_BIN).mtimeMs < Math.max(...sources)) {
    execFileSync('go', ['build', '-o', QUICGO_BIN, '.'], { cwd: QUICGO_DIR, stdio: 'inherit', timeout: 600_000 });
  }
  return QUICGO_BIN;
}

interface QuicGoResponse {
  status: number;
  header_lines: [string, string][] | null;
  body: string;
  proto: string;
  error?: string;
  body_bytes: number;
  body_sha256: string;
  chunks: [number, number][] | null;
  elapsed_ms: number;
}

export function quicGoClient(): H3Client {
  const bin = quicGoBinary();
  return {
    name: 'quic-go',
    version: `quic-go ${goModVersion('github.com/quic-go/quic-go')} http3 client, webtransport-go ${goModVersion('github.com/quic-go/webtransport-go')} (Go)`,
    cannot: (req) => (req.contentLength === false && (req.body !== undefined || req.bodyLen) ? "Go's http client sends a body of known length with its content-length" : null),
    cannotWebTransport: null,
    async fetch(port, reqs, { host = '127.0.0.1', timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
      const authority = host.includes(':') ? `[${host}]` : host;
      const plan = {
        base: `https://${authority}:${port}`,
        timeout_ms: timeoutMs,
        requests: reqs.map((r) => ({
          method: r.method,
          path: r.path,
          headers: r.headers,
          ...(r.body !== undefined ? { body_text: r.body } : {}),
          ...(r.bodyLen ? { body_len: r.bodyLen } : {}),
          ...(r.uploadBytes ? { body_pattern: r.uploadBytes } : {}),
          body_keep: BODY_KEEP,
        })),
      };
      const out = await runJsonProcess<{ responses: QuicGoResponse[] }>(bin, [], plan, 'quicgo-interop');
      return out.responses.map((x) => ({
        status: x.error && !x.status ? null : x.status,
        headers: x.header_lines ?? [],
        body: x.body ?? '',
        bodyBytes: x.body_bytes ?? 0,
        bodySha256: x.body_sha256 ?? '',
        chunks: (x.chunks ?? []).map(([t, bytes]) => ({ t, bytes })),
        totalMs: Math.round(x.elapsed_ms ?? 0),
        protocol: x.proto === 'HTTP/3.0' ? 'h3' : x.proto,
        ...(x.error ? { error: x.error } : {}),
      }));
    },
    async webTransport(port, stream, datagram) {
      const r = await runJsonProcess<any>(bin, [], { base: `https://127.0.0.1:${port}`, requests: [], webtransport: { path: '/wt', stream, datagram } }, 'quicgo-interop');
      const w = r.webtransport;
      return { status: w.status || null, streamEcho: w.stream_echo, datagramEcho: w.datagram_echo, ...(w.error ? { error: w.error } : {}) };
    },
    // ChaCha20 alone through the TLS 1.3 suite lists crypto/tls keeps
    // reachable for quic-go; a key update is quic-go's own, after its first
    // 100 packets (no API asks for one), seen by a qlog tracer.
    runPlan: (plan) => runJsonProcess<RunnerResult>(bin, ['runner'], plan, 'quicgo-interop runner'),
    close: async () => {},
  };
}
