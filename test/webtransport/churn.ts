// 1,000 WebTransport sessions opened and ended every way (half of them
// answered through web streams, half through Node Duplexes), in a process of
// its own so that the RSS compared is this server's alone (not the test
// runner's with every other suite's leftovers). Prints one JSON object:
// RSS before and after (MiB), sessions the application still holds, and the
// core's open connections and request streams.
//   node --expose-gc --import tsx test/webtransport/churn.ts
import { createSecureServer, silentLogger, WebTransportSession } from '../../src/index';
import { addon } from '../../src/native/binding';
import { b64 } from '../helpers/h3client';
import { upperCaseApp, upperCaseDuplexApp } from '../helpers/wt-apps';
import { runWt } from '../helpers/wt-client';

const exposedGc = (globalThis as { gc?: () => void }).gc;
if (!exposedGc) throw new Error('run with --expose-gc');
const gc: () => void = exposedGc;

/** Ten sessions per client connection, each ended its own way. */
const WAYS = ['close', 'fin', 'reset', 'server', 'refuse', 'open', 'close', 'fin', 'server', 'open'];

async function main(): Promise<void> {
  const sessions = new Set<WebTransportSession>();
  let accepted = 0;
  const server = createSecureServer({ tcp: false, warnDemoIdentity: false, logger: silentLogger, idleTimeoutMs: 1000, webtransport: { maxSessions: 64 } });
  server.on('session', (req) => {
    if (req.path === '/refuse') return req.reject(403);
    const session = req.accept();
    sessions.add(session);
    session.closed.then(
      () => sessions.delete(session),
      () => sessions.delete(session),
    );
    if (req.path === '/server-closes') setTimeout(() => session.close({ closeCode: 1, reason: 'done' }), 10);
    // Every other session answers through the Node-stream shape (Duplexes).
    if (++accepted % 2 === 0) upperCaseDuplexApp(session);
    else upperCaseApp(session);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as { port: number }).port;

  // Five clients at a time; every other connection vanishes without
  // CONNECTION_CLOSE and is freed by the idle timeout.
  const round = async (connections: number) => {
    for (let c = 0; c < connections; c += 5) {
      const runs = Array.from({ length: 5 }, (_, k) => {
        const actions: Record<string, unknown>[] = [];
        WAYS.forEach((way, i) => {
          const name = `s${i}`;
          const path = way === 'server' ? '/server-closes' : way === 'refuse' ? '/refuse' : '/x';
          actions.push({ op: 'session', name, path });
          if (way === 'refuse') return;
          actions.push({ op: 'bidi', session: name, name: `${name}b`, data_b64: b64('data'), fin: false });
          actions.push({ op: 'datagram', session: name, data_b64: b64('d'), count: 1, wait_ms: 0 });
          if (way === 'close') actions.push({ op: 'close', session: name, code: 5, reason: 'bye' });
          else if (way === 'fin') actions.push({ op: 'fin_session', session: name });
          else if (way === 'reset') actions.push({ op: 'reset', stream: name, code: 0x10c });
        });
        actions.push({ op: 'sleep', ms: 30 });
        return runWt(port, actions as never, (c + k) % 2 === 0 ? {} : { close: null }).then((r) => {
          if (!r.connected) throw new Error(`client did not connect: ${r.error}`);
        });
      });
      await Promise.all(runs);
    }
    const deadline = Date.now() + 10000;
    const busy = () => sessions.size > 0 || server.counters()!.requestStreamsOpen > 0 || server.counters()!.connectionsOpen > 0;
    while (busy() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  };
  const settledRss = () => {
    for (let i = 0; i < 3; i++) gc();
    addon().releaseFreeNativeMemory();
    return process.memoryUsage().rss / 2 ** 20;
  };
  // Warm-up: 2,000 sessions. In this process RSS rose in steps over the
  // first ~1,800 and then held (after rounds of 200: 105.9, 108.8, 100.8,
  // 101.2, 102.3, 102.5, 103.4, 109.3, 114.8, 115.2, 115.4, 115.7 MiB) with
  // V8's heap flat at 10.1-10.4 MiB and every count back to 0: the
  // allocator's reserves at the peaks of five clients at once, not a leak,
  // which would grow with every round.
  for (let i = 0; i < 10; i++) await round(20);
  const before = settledRss();
  await round(100); // 1,000 sessions
  const after = settledRss();
  const c = server.counters()!;
  process.stdout.write(`${JSON.stringify({ before, after, sessionsLeft: sessions.size, connections: c.connectionsOpen, streams: c.requestStreamsOpen })}\n`);
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
