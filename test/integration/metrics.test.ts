// Prometheus metrics (`--metrics-port`, startMetrics): scraped over HTTP/1.1
// after real traffic (aioquic HTTP/3 requests, a WebTransport session, a
// handshake that fails on ALPN), each value checked against what was sent.
import assert from 'node:assert/strict';
import { createServer, Http3Server, startMetrics, MetricsEndpoint } from '../../src';
import { WebTransportStats } from '../../src/demo';
import { createProfileB } from '../../src/demo/profiles/profile-b';
import { b64, b64 as b64Bytes, request, runClient } from '../helpers/clients/h3client';
import { runWt } from '../helpers/clients/wt-client';
import { CliProcess, MemoryLogger, startCli } from '../helpers/server';

/** Parses the Prometheus text format into `name{labels}` -> value. */
function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$/);
    assert.ok(m, `not a Prometheus sample line: ${line}`);
    out.set(m[1], Number(m[2]));
  }
  return out;
}

async function scrape(url: string): Promise<Map<string, number>> {
  const res = await fetch(url);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseMetrics(await res.text());
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 8000): Promise<void> {
  const start = Date.now();
  while (!(await check())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('Prometheus metrics endpoint', function () {
  this.timeout(60000);
  let server: Http3Server;
  let metrics: MetricsEndpoint;
  let port: number;

  before(async () => {
    const stats = new WebTransportStats();
    server = createServer({ webtransport: true, logger: new MemoryLogger() }, createProfileB(stats));
    stats.attach(server);
    metrics = await startMetrics(server, { port: 0, webtransport: true });
    ({ port } = await server.listen(0, '127.0.0.1'));
  });
  after(async () => {
    await metrics?.close();
    await server?.close();
  });

  it('listens on 127.0.0.1 by default and answers 404 off /metrics', async () => {
    assert.match(metrics.url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    const res = await fetch(metrics.url.replace('/metrics', '/other'));
    assert.equal(res.status, 404);
  });

  it('starts at zero, then counts connections, requests by status, bytes both ways, WebTransport usage and handshake failures', async () => {
    const before = await scrape(metrics.url);
    for (const name of [
      'h3_connections_open',
      'h3_connections_total',
      'h3_handshake_failures_total',
      'h3_bytes_received_total',
      'h3_bytes_sent_total',
      'h3_webtransport_sessions_open',
      'h3_webtransport_sessions_total',
      'h3_webtransport_streams_total',
      'h3_webtransport_datagrams_total',
      'h3_path_migrations_total',
      'h3_paths_validated_total',
      'h3_paths_validation_failed_total',
      'h3_datagrams_sent_with_source_total',
      'h3_send_failures_total',
    ]) {
      assert.equal(before.get(name), 0, name);
    }
    assert.equal(before.get('h3_webtransport_sessions_cap'), 32);
    assert.equal(before.get('h3_webtransport_peer_streams_cap'), 128);
    assert.ok(before.has('process_cpu_user_seconds_total'), 'default Node process metrics are exported');

    // Connection 1: three requests, two statuses.
    const r = await runClient(port, { requests: [{ path: '/stats' }, { path: '/nope' }, { path: '/missing' }] });
    assert.deepEqual(r.responses.map((x) => x.status), [200, 404, 404]);
    // Connection 2: a WebTransport session with one bidi stream and 4 datagrams, and /stats on it.
    const wt = await runWt(port, [
      { op: 'session', name: 's', path: '/wt' },
      { op: 'bidi', session: 's', name: 'b', data_b64: b64('hi'), wait: true },
      { op: 'datagram', session: 's', data_b64: b64('d'), count: 4, wait_ms: 1000 },
      { op: 'get', path: '/stats' },
    ]);
    assert.equal(wt.results[0].status, 200);
    const doc = JSON.parse(wt.results[3].body);
    // Connection 3: offers only h2, so the handshake fails (no common ALPN).
    const bad = await runClient(port, { alpn: ['h2'], requests: [{ path: '/stats' }], timeout: 3 });
    assert.equal(bad.connected, false);

    await until('the failed handshake to be counted and every connection closed', async () => {
      const m = await scrape(metrics.url);
      return m.get('h3_handshake_failures_total') === 1 && m.get('h3_connections_open') === 0;
    });
    const m = await scrape(metrics.url);
    const native = server.counters();
    assert.equal(m.get('h3_connections_total'), 3);
    // Two GET /stats from handlers, plus the 200 the native core wrote to
    // open the WebTransport session.
    assert.equal(m.get('h3_requests_total{status="200"}'), 3);
    assert.equal(m.get('h3_requests_total{status="404"}'), 2);
    assert.equal(m.get('h3_bytes_received_total'), native.udpBytesReceived);
    assert.equal(m.get('h3_bytes_sent_total'), native.udpBytesSent);
    assert.ok(native.udpBytesSent > 3 * 1200, 'at least the three handshake flights were sent');
    assert.ok(native.udpBytesReceived >= 3 * 1200, 'client Initials are padded to 1200 bytes');
    // Profile B's counters agree with the /stats document the session read.
    assert.equal(m.get('h3_webtransport_sessions_total'), 1);
    assert.equal(m.get('h3_webtransport_streams_total'), doc.usage.streams);
    assert.equal(m.get('h3_webtransport_datagrams_total'), doc.usage.datagrams);
    assert.equal(doc.usage.datagrams, 4);
    assert.equal(m.get('h3_webtransport_sessions_open'), 0);
  });
});

/** Runs `fn` against a CLI started with `--metrics-port 0`, given the metrics URL it printed. */
async function withMetricsCli(profile: string, fn: (cli: CliProcess, url: string) => Promise<void>): Promise<void> {
  const cli = await startCli(['--profile', profile, '--metrics-port', '0']);
  try {
    const url = (await cli.waitForStderr(/Prometheus metrics at (\S+)/)).split(' at ')[1];
    await fn(cli, url);
  } finally {
    await cli.stop();
  }
}

describe('CLI --metrics-port', function () {
  this.timeout(30000);

  it('is off by default, and when on leaves the profile routes unchanged (/metrics over HTTP/3 is still 404)', async () => {
    const plain = await startCli(['--profile', 'a']);
    try {
      await plain.waitForStderr(/WARNING: demo identity/); // the last startup line
      assert.doesNotMatch(plain.stderr(), /metrics/i);
    } finally {
      await plain.stop();
    }
    await withMetricsCli('a', async (cli, url) => {
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      assert.equal((await request(cli.port, { path: '/metrics' })).status, 404);
      assert.equal((await request(cli.port, { path: '/login' })).status, 200);
      const m = await scrape(url);
      assert.equal(m.get('h3_requests_total{status="404"}'), 1);
      assert.equal(m.get('h3_requests_total{status="200"}'), 1);
      assert.equal(m.get('h3_connections_total'), 2);
      assert.equal(m.has('h3_webtransport_sessions_total'), false, 'Profile A exports no WebTransport series');
    });
  });

  it('counts the answers the native core writes itself (413, 431, 501) by status, next to handler answers', async () => {
    await withMetricsCli('a', async (cli, url) => {
      const r = await runClient(cli.port, {
        sequential: true,
        requests: [
          // One byte over Profile A's 16 KiB buffered body window: 413.
          { method: 'POST', path: '/login', body_b64: b64Bytes(Buffer.alloc(16 * 1024 + 1, 1)) },
          // A field section over the 16 KiB limit: 431.
          { path: '/login', headers: [['x-big', 'a'.repeat(20000)]] },
          // A plain CONNECT (this is not a proxy) and an extended CONNECT
          // without WebTransport enabled: 501 both.
          { path: '/', raw_headers: [[':method', 'CONNECT'], [':authority', 'example.com:443']], end_stream: false },
          {
            path: '/wt',
            raw_headers: [[':method', 'CONNECT'], [':protocol', 'webtransport'], [':scheme', 'https'], [':authority', 'localhost'], [':path', '/wt']],
            end_stream: false,
          },
          // And one answer from a handler.
          { path: '/login' },
        ],
    });
    assert.deepEqual(r.responses.map((x) => x.status), [413, 431, 501, 501, 200]);
    const m = await scrape(url);
    const byStatus = [...m].filter(([k]) => k.startsWith('h3_requests_total{')).sort();
    assert.deepEqual(byStatus, [
      ['h3_requests_total{status="200"}', 1],
      ['h3_requests_total{status="413"}', 1],
      ['h3_requests_total{status="431"}', 1],
      ['h3_requests_total{status="501"}', 2],
    ]);
    });
  });

  it('counts the 200 that opens each WebTransport session and the 429 past the sessions cap', async () => {
    await withMetricsCli('b', async (cli, url) => {
      const actions = Array.from({ length: 33 }, (_, i) => ({ op: 'session', name: `s${i}` }));
      const r = await runWt(cli.port, actions, { timeout: 10 });
      assert.deepEqual(r.results.map((x) => x.status), [...Array(32).fill(200), 429]);
      const m = await scrape(url);
      assert.equal(m.get('h3_requests_total{status="200"}'), 32);
      assert.equal(m.get('h3_requests_total{status="429"}'), 1);
      assert.equal(m.get('h3_webtransport_sessions_total'), 32);
    });
  });

  it('--profile b exports the WebTransport series', async () => {
    await withMetricsCli('b', async (_cli, url) => {
      const m = await scrape(url);
      assert.equal(m.get('h3_webtransport_sessions_total'), 0);
      assert.equal(m.get('h3_webtransport_sessions_cap'), 32);
    });
  });
});
