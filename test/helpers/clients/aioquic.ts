// aioquic (Python), an HTTP/3 stack independent of quiche: requests through
// h3client.py, WebTransport through wt_client.py, interop-runner plans
// through runner_client.py. Every script runs in the project's venv
// (scripts/setup-python.sh).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { CLIENTS, PYTHON } from '../paths';
import { runJsonProcess } from '../process';
import { b64 } from './h3client';
import { runWt } from './wt-client';
import { BODY_KEEP, DEFAULT_TIMEOUT_MS, failedResponse, H3Client, RunnerResult } from './adapter';

const H3_CLIENT = path.join(CLIENTS, 'h3client.py');
const RUNNER_CLIENT = path.join(CLIENTS, 'runner_client.py');
/** Upload bytes the client leaves unacknowledged in aioquic's send buffer at most. */
const UPLOAD_BUFFERED = 4 << 20;

interface AioquicResponse {
  status: number | null;
  headers: [string, string][];
  body_text: string;
  body_length: number;
  body_sha256: string;
  chunks: [number, number][];
  elapsed_ms: number;
  reset_code: number | null;
  error: string | null;
}

export function aioquicClient(): H3Client {
  const version = execFileSync(PYTHON, ['-c', 'import importlib.metadata as m; print(m.version("aioquic"))']).toString().trim();
  return {
    name: 'aioquic',
    version: `aioquic ${version} (Python)`,
    cannot: () => null,
    cannotWebTransport: null,
    async fetch(port, reqs, { host = '127.0.0.1', timeoutMs = DEFAULT_TIMEOUT_MS } = {}) {
      const plan = {
        timeout: timeoutMs / 1000,
        sequential: true,
        requests: reqs.map((r) => ({
          method: r.method,
          path: r.path,
          headers: r.headers,
          ...(r.body !== undefined ? { body_text: r.body } : {}),
          ...(r.bodyLen ? { body_b64: b64(Buffer.alloc(r.bodyLen, 0x78)) } : {}),
          ...(r.uploadBytes ? { body_generate: { total: r.uploadBytes, pattern: true, max_buffered: UPLOAD_BUFFERED } } : {}),
          content_length: r.contentLength ?? !r.uploadBytes,
          body_keep: BODY_KEEP,
        })),
      };
      const out = await runJsonProcess<{ connected: boolean; handshake_error: string | null; responses: AioquicResponse[] }>(
        PYTHON,
        [H3_CLIENT, '--host', host, '--port', String(port)],
        plan,
        'h3client.py',
      );
      if (!out.connected) return reqs.map(() => failedResponse(`handshake: ${out.handshake_error}`));
      return out.responses.map((x) => ({
        status: x.status,
        headers: x.headers.filter(([name]) => !name.startsWith(':')),
        body: x.body_text,
        bodyBytes: x.body_length,
        bodySha256: x.body_sha256,
        chunks: x.chunks.map(([t, bytes]) => ({ t, bytes })),
        totalMs: Math.round(x.elapsed_ms),
        protocol: 'h3', // aioquic speaks only HTTP/3 (ALPN h3)
        ...(x.error || x.reset_code !== null ? { error: x.error ?? `stream reset 0x${x.reset_code!.toString(16)}` } : {}),
      }));
    },
    async webTransport(port, stream, datagram) {
      const r = await runWt(port, [
        { op: 'session', name: 's', path: '/wt' },
        { op: 'bidi', session: 's', name: 'b', data_b64: b64(stream), wait: true },
        { op: 'datagram', session: 's', data_b64: b64(datagram), count: 1, wait_ms: 2000 },
      ]);
      if (!r.connected) return { status: null, streamEcho: '', datagramEcho: '', error: r.error ?? 'not connected' };
      const [session, bidi, dg] = r.results;
      return {
        status: session?.status ?? null,
        streamEcho: bidi?.echo_b64 ? Buffer.from(bidi.echo_b64, 'base64').toString() : '',
        // wt_client.py counts echoes per session; one sent, one back.
        datagramEcho: dg?.echoed >= 1 ? datagram : '',
      };
    },
    runPlan: (plan) => runJsonProcess<RunnerResult>(PYTHON, [RUNNER_CLIENT], plan, 'runner_client.py'),
    close: async () => {},
  };
}
