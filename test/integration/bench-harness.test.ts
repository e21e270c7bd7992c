// The benchmark's own pieces (bench/): the bench-only native handlers and
// the boundary floor must answer exactly what the TypeScript profiles
// answer, or W6 compares different work; and the quiche datagram counter W7 checks against must
// match what Profile B counts. Real UDP, aioquic as the client.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { createServer, silentLogger } from '../../src';
import { WebTransportStats } from '../../src/demo';
import { withDevHooks } from '../../src/lib/dev-hooks';
import { profileA, profileC } from '../../src/demo/profiles';
import { createProfileB } from '../../src/demo/profiles/profile-b';
import { b64, runClient, PlannedRequest, H3Response } from '../helpers/clients/h3client';
import { ROOT } from '../helpers/paths';
import { startProcess } from '../helpers/process';
import { runWt } from '../helpers/clients/wt-client';
import { Medians, spread, w2Lines, w2Summary } from '../../bench/lib/report';
import type { Row } from '../../bench/lib/workloads';

/**
 * The addon variant with the bench answerer (cargo feature bench-handler),
 * which `npm run build:native:bench` builds (scripts/test.sh runs it); the
 * shipped addon in dist/native has no answerer.
 */
function benchAddon(): string {
  const dir = path.join(ROOT, 'bench', '.work', 'addon-bench');
  const found = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.node')) : [];
  assert.equal(found.length, 1, `no bench addon variant in ${dir}: run npm run build:native:bench`);
  return path.join(dir, found[0]);
}

const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';

/** A response as the comparisons take it: status, body, fields sorted as `name: value`. */
function summary(r: H3Response) {
  return {
    status: r.status,
    body: r.body_text,
    headers: r.headers.filter(([n]) => n !== ':status').map(([n, v]) => `${n}: ${v}`).sort(),
  };
}

async function answers(profile: typeof profileA, native: 'a' | 'c' | undefined, requests: PlannedRequest[]) {
  const { options, handler } = profile.create(silentLogger);
  const server = createServer(withDevHooks({ ...options, logger: silentLogger }, native ? { benchNativeHandler: native, addonPath: benchAddon() } : {}), handler);
  try {
    const { port } = await server.listen(0, '127.0.0.1');
    const result = await runClient(port, { timeout: 5, requests, sequential: true });
    return result.responses.map(summary);
  } finally {
    await server.close();
  }
}

/** A body of `n` bytes as the aioquic client takes it (base64). */
const body = (n: number) => Buffer.alloc(n, 'x').toString('base64');

/** Profile A's routes as W1's launchers serve them, each way /secret is answered. */
const W1_ROUTES: PlannedRequest[] = [
  { path: '/login' },
  { path: '/redirect' },
  { path: '/secret' },
  { path: '/secret', headers: [['authorization', BEARER]] },
  { path: '/secret', headers: [['cookie', COOKIE]] },
];

const CERTS = ['demo-cert.pem', 'demo-key.pem'].map((f) => path.join(ROOT, 'certs', f));

/** A bench/servers launcher's answers (it prints `{"listening": port}` when ready). */
async function launcherAnswers(script: string, args: string[], requests: PlannedRequest[], env?: NodeJS.ProcessEnv) {
  const child = startProcess(process.execPath, [path.join(ROOT, 'bench', 'servers', script), ...args], { label: script, env });
  try {
    const { listening } = await child.waitForJson<{ listening: number }>((v) => typeof v.listening === 'number');
    const result = await runClient(listening, { timeout: 5, requests, sequential: true });
    return result.responses.map(summary);
  } finally {
    await child.stop();
  }
}

describe('benchmark harness pieces', function () {
  this.timeout(30_000);

  it('the native Profile A handler answers every route exactly like the TypeScript one', async () => {
    const requests: PlannedRequest[] = [
      { path: '/login' },
      { path: '/redirect' },
      { path: '/secret' },
      { path: '/secret', headers: [['authorization', BEARER]] },
      { path: '/secret', headers: [['cookie', COOKIE]] },
      { path: '/secret', headers: [['authorization', 'Bearer wrong']] },
      { path: '/login?x=1', method: 'POST' },
      { path: '/nope' },
    ];
    const ts = await answers(profileA, undefined, requests);
    const native = await answers(profileA, 'a', requests);
    assert.deepEqual(
      ts.map((r) => r.status),
      [200, 302, 401, 200, 200, 401, 200, 404],
    );
    assert.deepEqual(native, ts);
  });

  it('the native Profile C handler counts and caps bodies exactly like the TypeScript one', async () => {
    const requests: PlannedRequest[] = [
      { method: 'POST', path: '/', body_b64: body(0) },
      { method: 'POST', path: '/', body_b64: body(1) },
      { method: 'POST', path: '/c', body_b64: body(4096) },
      { method: 'POST', path: '/c', body_b64: body(4097) },
      { method: 'POST', path: '/c', body_chunks_b64: [body(3000), body(1000)] },
    ];
    const ts = await answers(profileC, undefined, requests);
    const native = await answers(profileC, 'c', requests);
    assert.deepEqual(
      ts.map((r) => [r.status, r.body]),
      [
        [200, '0\n'],
        [200, '1\n'],
        [200, '4096\n'],
        [413, ''],
        [200, '4000\n'],
      ],
    );
    assert.deepEqual(native, ts);
  });

  it("the boundary floor answers W1's and W3's requests exactly as Profiles A and C do", async () => {
    const floorAnswers = (profile: 'a' | 'c', requests: PlannedRequest[]) => launcherAnswers('boundary-floor.mjs', [profile, '0', ...CERTS], requests);
    const login: PlannedRequest[] = [{ path: '/login' }];
    const w1 = await floorAnswers('a', login);
    assert.equal(w1[0].status, 200);
    assert.deepEqual(w1, await answers(profileA, undefined, login));
    const counts: PlannedRequest[] = [
      { method: 'POST', path: '/count', body_b64: body(4096) },
      { method: 'POST', path: '/count', body_chunks_b64: [body(3000), body(1000)] },
    ];
    const w3 = await floorAnswers('c', counts);
    assert.deepEqual(
      w3.map((r) => r.body),
      ['4096\n', '4000\n'],
    );
    assert.deepEqual(w3, await answers(profileC, undefined, counts));
  });

  it("W8's native transfer answers /upload and /file as createSecureServer's W8 listener does, and leaves other routes to JavaScript", async () => {
    // 700 KiB: the download refills past the 256 KiB high-water mark
    // several times and ends on a short piece.
    const dir = fs.mkdtempSync(path.join(ROOT, 'bench', '.work', 'w8-test-'));
    const file = path.join(dir, 'file.bin');
    const bytes = Buffer.alloc(700 * 1024 + 13);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + (i >> 9)) & 0xff;
    fs.writeFileSync(file, bytes);
    const sha = crypto.createHash('sha256').update(bytes).digest('hex');
    const requests: PlannedRequest[] = [
      { path: '/file' },
      { method: 'POST', path: '/upload', body_generate: { total: 3 * 1024 * 1024, chunk_size: 65536 } },
      { method: 'POST', path: '/upload', body_b64: body(0) },
      { path: '/login' },
    ];
    const seen = (r: H3Response) => ({
      status: r.status,
      length: r.body_length,
      sha256: r.body_sha256,
      fields: r.headers.filter(([n]) => n === 'content-type' || n === 'content-length').map(([n, v]) => `${n}: ${v}`).sort(),
    });
    const run = async (script: string, extra: string[]) => {
      const child = startProcess(process.execPath, [path.join(ROOT, 'bench', 'servers', script), '0', ...CERTS, file, ...extra], { label: script });
      try {
        const { listening } = await child.waitForJson<{ listening: number }>((v) => typeof v.listening === 'number');
        return (await runClient(listening, { timeout: 20, requests, sequential: true })).responses;
      } finally {
        await child.stop();
      }
    };
    try {
      const native = await run('h3-node-w8-native.mjs', ['--addon', benchAddon()]);
      const compat = await run('h3-node-compat.mjs', []);
      assert.equal(native[0].body_sha256, sha, 'the download is the file, byte for byte');
      assert.equal(native[0].body_length, bytes.length);
      assert.deepEqual(
        native.slice(1).map((r) => r.body_text),
        [`${3 * 1024 * 1024}\n`, '0\n', 'login succeeded\n'],
      );
      assert.deepEqual(native.map(seen), compat.map(seen));
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("serve's launcher answers W1's and W3's routes as Profiles A and C do (status, body, the profile's fields)", async () => {
    const a: PlannedRequest[] = [...W1_ROUTES, { path: '/login?x=1', method: 'POST' }, { path: '/nope' }];
    const c: PlannedRequest[] = [
      { method: 'POST', path: '/count', body_b64: body(4096) },
      { method: 'POST', path: '/count', body_chunks_b64: [body(3000), body(1000)] },
      { method: 'POST', path: '/count', body_b64: body(0) },
    ];
    const fetchServer = await launcherAnswers('h3-node-fetch.mjs', ['0', ...CERTS], [...a, ...c]);
    const profiles = [...(await answers(profileA, undefined, a)), ...(await answers(profileC, undefined, c))];
    // The fetch path adds date and content-length; the profile's own fields must be there as they are.
    const shown = (r: { status: number | null; body: string; headers: string[] }) => ({
      status: r.status,
      body: r.body,
      headers: r.headers.filter((h) => /^(content-type|set-cookie|location):/.test(h)),
    });
    assert.deepEqual(fetchServer.map(shown), profiles.map(shown));
    assert.deepEqual(
      fetchServer.map((r) => r.status),
      [200, 302, 401, 200, 200, 200, 404, 200, 200, 200],
    );
  });

  it("the fetch floor's and the Hono app's launchers answer W1's routes (and the floor W3's) as serve's launcher does", async () => {
    const a: PlannedRequest[] = [...W1_ROUTES, { path: '/nope' }];
    const c: PlannedRequest[] = [
      { method: 'POST', path: '/count', body_b64: body(4096) },
      { method: 'POST', path: '/count', body_chunks_b64: [body(3000), body(1000)] },
      { method: 'POST', path: '/count', body_b64: body(5000) },
    ];
    const serve = await launcherAnswers('h3-node-fetch.mjs', ['0', ...CERTS], [...a, ...c]);
    const floor = await launcherAnswers('fetch-floor.mjs', ['0', ...CERTS], [...a, ...c]);
    const hono = await launcherAnswers('h3-node-hono.mjs', ['0', ...CERTS], a);
    const shown = (r: { status: number | null; body: string; headers: string[] }) => ({
      status: r.status,
      body: r.body,
      headers: r.headers.filter((h) => /^(set-cookie|location):/.test(h)),
    });
    assert.deepEqual(
      serve.map((r) => r.status),
      [200, 302, 401, 200, 200, 404, 200, 200, 413],
    );
    assert.deepEqual(floor.map(shown), serve.map(shown));
    assert.deepEqual(hono.map(shown), serve.slice(0, a.length).map(shown));
  });

  it("createSecureServer's launcher with H3_BENCH_SAME_BYTES answers W1's and W3's requests with createServer's fields exactly; without it, date and content-length are added", async () => {
    const a: PlannedRequest[] = [{ path: '/login' }];
    const c: PlannedRequest[] = [{ method: 'POST', path: '/count', body_b64: body(4096) }];
    const profiles = [...(await answers(profileA, undefined, a)), ...(await answers(profileC, undefined, c))];
    const same = await launcherAnswers('h3-node-compat.mjs', ['0', ...CERTS], [...a, ...c], { H3_BENCH_SAME_BYTES: '1' });
    assert.deepEqual(same, profiles);
    const usual = await launcherAnswers('h3-node-compat.mjs', ['0', ...CERTS], [...a, ...c]);
    assert.deepEqual(
      usual.map((r) => r.headers.filter((h) => !/^(date|content-length):/.test(h))),
      profiles.map((r) => r.headers),
    );
    for (const r of usual) {
      assert.match(r.headers.join('\n'), /^date: \w{3}, \d{2} \w{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/m);
      assert.match(r.headers.join('\n'), new RegExp(`^content-length: ${Buffer.byteLength(r.body)}$`, 'm'));
    }
  });

  it("summarises W2 per round: CPU per fresh connection from schedstat, each h3-node row over Caddy's of the same round, the spread", () => {
    const row = (variant: string, round: number, exact: number | undefined, p50 = 1): Row =>
      ({ workload: 'W2', variant, round, requests: 2000, rps: 800, p50_ms: p50, cpu_us_per_req: 600, ...(exact === undefined ? {} : { cpu_us_per_req_exact: exact }) }) as Row;
    const rows = [
      // 400 us x 800 connections/s = 32 % of the core; the core was 50 % busy: others took 18 %.
      { ...row('h3-node (TypeScript)', 1, 400), server_core_all: 0.5 },
      row('caddy', 1, 1000, 2),
      row('h3-node (TypeScript)', 2, 420),
      row('caddy', 2, 1200, 2),
      row('h3-node (TypeScript)', 3, 410),
      row('caddy', 3, 1000, 2),
      // W1 rows and rows without the scheduler's figure are not W2's CPU per connection.
      { ...row('h3-node (TypeScript)', 1, 5), workload: 'W1' },
      row('h3-node (native)', 1, undefined),
    ];
    const s = w2Summary(rows, 2000);
    assert.deepEqual(
      s.servers.map((x) => [x.variant, x.cpu_us, x.per_round_us]),
      [
        ['h3-node (TypeScript)', 410, [400, 420, 410]],
        ['caddy', 1000, [1000, 1200, 1000]],
      ],
    );
    const ts = s.servers[0];
    assert.ok(Math.abs(ts.rel_spread - 20 / 410) < 1e-12);
    // sd 10 over sqrt(3), over the mean 410.
    assert.ok(Math.abs(ts.rel_std_err - 10 / Math.sqrt(3) / 410) < 1e-12);
    assert.ok(Math.abs(ts.others_on_server_core[0] - 0.18) < 1e-12);
    assert.ok(Number.isNaN(ts.others_on_server_core[1]), 'not measured');
    assert.equal(s.vs_caddy.length, 1);
    assert.deepEqual(s.vs_caddy[0].per_round, [0.4, 0.35, 0.41]);
    assert.equal(s.vs_caddy[0].ratio, 0.4);
    assert.ok(w2Lines(s).some((l) => l.includes('h3-node (TypeScript) / caddy') && l.includes('0.400x')));
    const one = spread([7]);
    assert.equal(one.relSpread, 0);
    assert.ok(Number.isNaN(one.relStdErr));
  });

  it('pairs createSecureServer with createServer by round: the median of the rounds\' own ratios, rounds one of them lacks left out', () => {
    const row = (variant: string, round: number, exact: number | undefined, ticks = 20): Row =>
      ({ workload: 'W1', variant, round, requests: 100000, rps: 30000, p50_ms: 0.5, cpu_us_per_req: ticks, ...(exact === undefined ? {} : { cpu_us_per_req_exact: exact }) }) as Row;
    const rows = [
      // A fast round and a slow one: their ratios are 1.1 and 0.9 although
      // one server's median (15) sits in the slow round and the other's in the fast one.
      row('ts', 1, 10),
      row('compat', 1, 11),
      row('ts', 2, 20),
      row('compat', 2, 18),
      row('ts', 3, 15),
      row('compat', 3, 15),
      // No schedstat figure: the clock ticks stand in, as Medians.cpu does.
      row('ts', 4, undefined, 16),
      row('compat', 4, undefined, 20),
      // A round without its pair is not a ratio.
      row('compat', 5, 100),
      { ...row('ts', 1, 1), workload: 'W3' },
    ];
    const c = new Medians(rows).pairedCpu('W1', 'compat', 'ts');
    assert.deepEqual(c.perRound.map((x) => Number(x.toFixed(6))), [1.1, 0.9, 1, 1.25]);
    // Median of four: the lower middle, as median() takes it.
    assert.equal(Number(c.ratio.toFixed(6)), 1);
    // The ratio of the medians (compat 18 of 11, 18, 15, 20, 100; ts 15 of 10, 20, 15, 16).
    assert.equal(Number(c.ofMedians.toFixed(6)), 1.2);
  });

  it("counts quiche's received DATAGRAM frames, equal to Profile B's usage.datagrams", async () => {
    const stats = new WebTransportStats();
    const server = createServer({ webtransport: true, logger: silentLogger }, createProfileB(stats));
    stats.attach(server);
    try {
      const { port } = await server.listen(0, '127.0.0.1');
      const wt = await runWt(port, [
        { op: 'session', name: 's', path: '/wt' },
        { op: 'datagram', session: 's', data_b64: b64('ping'), count: 300, wait_ms: 2000 },
        { op: 'get', path: '/stats' },
      ]);
      const doc = JSON.parse(String((wt.results[2] as { body: string }).body));
      const c = server.counters();
      assert.ok(c.quicDatagramsReceived >= 1, 'quiche reported datagrams');
      assert.equal(doc.usage.datagrams, c.quicDatagramsReceived);
      assert.equal(c.wtDatagramsReceived, c.quicDatagramsReceived);
    } finally {
      await server.close();
    }
  });
});
