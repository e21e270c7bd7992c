// The three clients of the interop-runner matrix (test/interop/interop-runner.test.ts)
// behind one plan: connections one after another, each fetching its paths
// at once, with resumption, 0-RTT, a key update, ChaCha20 or a move to a new
// socket where asked. aioquic and quic-go take the plan as JSON
// (test/helpers/clients/runner_client.py, `quicgo-interop runner`); ngtcp2's example
// client gets it as command-line options, one process per connection.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildQuicGo, NGTCP2_CLIENT, QUICGO_BIN } from './interop-clients';
import { PYTHON, ROOT } from './paths';
import { runJsonProcess } from './process';

export interface RunnerConnectionPlan {
  paths: string[];
  /** Resume with the ticket of the connection before. */
  resume?: boolean;
  /** Resume and send the requests as 0-RTT. */
  early_data?: boolean;
  /** Update the 1-RTT keys once the handshake is done. */
  key_update?: boolean;
  /** Move to a new local socket after this many responses (0: never). */
  migrate_after?: number;
}

export interface RunnerPlan {
  host: string;
  port: number;
  sni: string;
  chacha20?: boolean;
  timeout: number;
  connections: RunnerConnectionPlan[];
  /**
   * ngtcp2 only: keep the client's frame trace (slower, so only for cases
   * of small files), so that a failure quotes the CONNECTION_CLOSE or
   * stateless reset the client received, if any.
   */
  traceFrames?: boolean;
}

export interface RunnerConnectionResult {
  handshake: boolean;
  resumed: boolean | null;
  early_data_accepted: boolean | null;
  cipher: string | null;
  key_updated: boolean | null;
  migrated: boolean | null;
  error: string | null;
}

export interface RunnerResponse {
  connection: number;
  path: string;
  status: number | null;
  length: number;
  sha256: string;
  error: string | null;
}

export interface RunnerResult {
  connections: RunnerConnectionResult[];
  responses: RunnerResponse[];
  error: string | null;
}

export interface RunnerClient {
  name: string;
  version: string;
  /** Why this client cannot express the plan at all, or null. */
  cannot(plan: RunnerPlan): string | null;
  run(plan: RunnerPlan): Promise<RunnerResult>;
}

const RUNNER_PY = path.join(ROOT, 'test', 'helpers', 'clients', 'runner_client.py');

export function aioquicRunner(): RunnerClient {
  return {
    name: 'aioquic',
    version: 'aioquic 1.7 (Python): `test/helpers/clients/runner_client.py`',
    cannot: () => null,
    run: (plan) => runJsonProcess<RunnerResult>(PYTHON, [RUNNER_PY], plan, 'runner_client.py'),
  };
}

export function quicGoRunner(): RunnerClient {
  buildQuicGo();
  return {
    name: 'quic-go',
    version: 'quic-go v0.59.0 (Go): `test/helpers/clients/quicgo/runner.go`',
    // ChaCha20 alone through the TLS 1.3 suite lists crypto/tls keeps
    // reachable for quic-go; a key update is quic-go's own, after its first
    // 100 packets (no API asks for one), seen by a qlog tracer.
    cannot: () => null,
    run: (plan) => runJsonProcess<RunnerResult>(QUICGO_BIN, ['runner'], plan, 'quicgo-interop runner'),
  };
}

/** ngtcp2's example client: one process per connection, options for each feature, files from --download. */
export function ngtcp2Runner(): RunnerClient {
  return {
    name: 'ngtcp2',
    version: 'ngtcp2 0.12 example client (`gtlsclient`, Debian ngtcp2-client, C, GnuTLS)',
    cannot: () => null,
    async run(plan) {
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
