// ngtcp2's example client (`gtlsclient`, Debian's ngtcp2-client; C, GnuTLS,
// nghttp3): one process per request (it sends the same method and body on
// every URI it is given) and per interop-runner connection (options for
// each feature, files from --download). It prints what it received as
// debug lines, which this adapter reads.
import { execFile, execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClientRequest, ClientResponse, H3Client, RunnerConnectionPlan, RunnerConnectionResult, RunnerPlan, RunnerResponse, RunnerResult } from './adapter';

export const NGTCP2_CLIENT = '/usr/bin/gtlsclient';

function ngtcp2Version(): string {
  try {
    return execFileSync('dpkg-query', ['-W', '-f=${Version}', 'ngtcp2-client']).toString().trim();
  } catch {
    return '?';
  }
}

function ngtcp2Request(port: number, req: ClientRequest, timeoutMs: number): Promise<ClientResponse> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ngtcp2-'));
  const seconds = Math.max(1, Math.ceil(timeoutMs / 1000));
  const args = ['--exit-on-all-streams-close', '--no-quic-dump', '--no-http-dump', `--timeout=${seconds}s`, `--download=${dir}`];
  if (req.method !== 'GET') args.push('-m', req.method);
  const body = req.body !== undefined ? Buffer.from(req.body) : req.bodyLen ? Buffer.alloc(req.bodyLen, 0x78) : undefined;
  if (body) {
    const file = path.join(dir, 'request-body');
    fs.writeFileSync(file, body);
    args.push('-d', file);
  }
  args.push('127.0.0.1', String(port), `https://127.0.0.1:${port}${req.path}`);
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(NGTCP2_CLIENT, args, { timeout: timeoutMs + 10000, maxBuffer: 16 << 20 }, (error, stdout, stderr) => {
      const text = `${stdout}\n${stderr}`;
      // The example client speaks only HTTP/3 (ALPN h3).
      const res: ClientResponse = { status: null, headers: [], body: '', bodyBytes: 0, bodySha256: '', chunks: [], totalMs: 0, protocol: 'h3' };
      // Debug lines: `http: stream 0x0 [name: value]`.
      for (const m of text.matchAll(/^http: stream 0x0 \[([^:\]]+|:[a-z]+): (.*)\]$/gm)) {
        if (m[1] === ':status') res.status = Number(m[2]);
        else res.headers.push([m[1], m[2]]);
      }
      // --download names the file after the path's last segment.
      const file = path.join(dir, path.basename(req.path) || 'index.html');
      if (fs.existsSync(file)) {
        const got = fs.readFileSync(file);
        res.body = got.toString('utf8');
        res.bodyBytes = got.length;
        res.bodySha256 = createHash('sha256').update(got).digest('hex');
      }
      res.totalMs = Date.now() - started;
      if (res.status === null) res.error = error ? `${error.message.split('\n')[0]}` : 'no response';
      fs.rmSync(dir, { recursive: true, force: true });
      resolve(res);
    });
  });
}

export function ngtcp2Client(): H3Client {
  return {
    name: 'ngtcp2',
    version: `ngtcp2 example client gtlsclient ${ngtcp2Version()} (Debian ngtcp2-client, C, nghttp3, GnuTLS)`,
    cannot: (req) =>
      req.headers.length > 0
        ? 'the example client has no option to add request header fields (no authorization, no cookie)'
        : req.uploadBytes
          ? 'the example client sends a body only from a file, with its length known'
          : null,
    cannotWebTransport: 'the example client only sends GET/POST requests to URIs: no extended CONNECT, no WebTransport streams or datagrams',
    async fetch(port, reqs, { timeoutMs = 5000 } = {}) {
      const out: ClientResponse[] = [];
      for (const r of reqs) out.push(await ngtcp2Request(port, r, timeoutMs));
      return out;
    },
    async runPlan(plan) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ngtcp2-runner-'));
      const result: RunnerResult = { connections: [], responses: [], error: null };
      const deadline = Date.now() + plan.timeout * 1000;
      try {
        for (const [i, c] of plan.connections.entries()) {
          const left = deadline - Date.now();
          if (left <= 0) {
            result.error = 'timeout';
            break;
          }
          const out = await ngtcp2Connection(plan, c, i, dir, left);
          result.connections.push(out.connection);
          result.responses.push(...out.responses);
        }
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
      return result;
    },
    close: async () => {},
  };
}
/** The example client's last lines that are not packet or timer traces, and the close it received (from a frame trace). */
function lastWords(text: string): string {
  const lines = text.split('\n');
  // Not packet, timer or frame traces, nor the hex dumps of TLS data the frame trace prints.
  const said = lines.filter((l) => l.trim() && !/^(I\d{8} |Sent packet|Received packet|Set timer|Timer has|\[|[0-9a-f]{8}( {2}|$))/.test(l));
  const words = JSON.stringify(said.slice(-3).join(' | ').slice(0, 300));
  const closed = lines.filter((l) => / frm rx .*CONNECTION_CLOSE| pkt rx .*type=SR/.test(l)).pop();
  return closed ? `${words}; it received: ${JSON.stringify(closed.replace(/^I\d{8} 0x[0-9a-f]+ /, '').slice(0, 200))}` : words;
}

/** GnuTLS's names of the TLS 1.3 suites, as the other clients name them. */
const GNUTLS_SUITES: Record<string, string> = {
  'AES-128-GCM': 'TLS_AES_128_GCM_SHA256',
  'AES-256-GCM': 'TLS_AES_256_GCM_SHA384',
  'CHACHA20-POLY1305': 'TLS_CHACHA20_POLY1305_SHA256',
  'AES-128-CCM': 'TLS_AES_128_CCM_SHA256',
};

async function ngtcp2Connection(plan: RunnerPlan, c: RunnerConnectionPlan, index: number, dir: string, timeoutMs: number) {
  const downloads = path.join(dir, `c${index}`);
  fs.mkdirSync(downloads);
  const session = path.join(dir, 'session');
  const tp = path.join(dir, 'transport-params');
  // The handshake may take as long as the plan (its default 10 s is less
  // than 30 % loss can need), like the other clients' handshakes.
  const seconds = Math.ceil(timeoutMs / 1000);
  const args = ['--exit-on-all-streams-close', ...(plan.traceFrames ? [] : ['--no-quic-dump']), '--no-http-dump', `--timeout=${seconds}s`, `--handshake-timeout=${seconds}s`, `--download=${downloads}`, `--sni=${plan.sni}`];
  // Every connection keeps the ticket it gets; the next one resumes (and
  // sends 0-RTT) only when asked to, reading what this one wrote.
  args.push(`--session-file=${session}`, `--tp-file=${tp}`);
  if (!(c.resume || c.early_data)) {
    fs.rmSync(session, { force: true });
    fs.rmSync(tp, { force: true });
  }
  if (!c.early_data) args.push('--disable-early-data');
  // A GnuTLS priority string: TLS 1.3 with ChaCha20-Poly1305 alone.
  if (plan.chacha20) args.push('--ciphers=NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+CHACHA20-POLY1305');
  if (c.key_update) args.push('--key-update=10ms');
  if (c.migrate_after) args.push('--change-local-addr=20ms');
  const authority = plan.host.includes(':') ? `[${plan.host}]:${plan.port}` : `${plan.host}:${plan.port}`;
  args.push(plan.host, String(plan.port), ...c.paths.map((p) => `https://${authority}${p}`));
  const { text, error } = await new Promise<{ text: string; error: Error | null }>((resolve) =>
    execFile(NGTCP2_CLIENT, args, { timeout: timeoutMs + 5000, maxBuffer: 256 << 20 }, (err, stdout, stderr) => resolve({ text: `${stdout}\n${stderr}`, error: err })),
  );
  // Debug lines: `http: stream 0x<id> [:status: 200]`, in the order the
  // client opened the streams, one per path (client bidi IDs 0, 4, 8...).
  const statuses = new Map<number, number>();
  for (const m of text.matchAll(/^http: stream 0x([0-9a-f]+) \[:status: (\d+)\]$/gm)) statuses.set(parseInt(m[1], 16), Number(m[2]));
  const responses: RunnerResponse[] = c.paths.map((p, k) => {
    const file = path.join(downloads, path.basename(p));
    const body = fs.existsSync(file) ? fs.readFileSync(file) : undefined;
    const status = statuses.get(k * 4) ?? null;
    return {
      connection: index,
      path: p,
      status,
      length: body?.length ?? 0,
      sha256: body ? createHash('sha256').update(body).digest('hex') : '',
      error: status === null ? `${error ? error.message.split('\n')[0] : 'no response'}; the client's last words: ${lastWords(text)}` : null,
    };
  });
  const suite = /^Negotiated cipher suite is (\S+)$/m.exec(text)?.[1];
  return {
    // What the example client prints: its debug lines name the suite
    // (GnuTLS's name), 0-RTT packets sent ("type=0RTT") and a refusal,
    // "key update confirmed", and the validated path after a move. It
    // prints nothing about resumption; the server counts that itself.
    connection: {
      handshake: /^QUIC handshake has completed$/m.test(text),
      resumed: null,
      early_data_accepted: c.early_data ? /type=0RTT/.test(text) && !/Early data was rejected/.test(text) : null,
      cipher: suite ? (GNUTLS_SUITES[suite] ?? suite) : null,
      key_updated: c.key_update ? /key update confirmed/.test(text) : null,
      migrated: c.migrate_after ? /^Path validation against path .* succeeded$/m.test(text) : null,
      error: error && statuses.size === 0 ? error.message.split('\n')[0] : null,
    } satisfies RunnerConnectionResult,
    responses,
  };
}
