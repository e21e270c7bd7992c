// The short soak (seconds, not minutes; `npm run soak` is the full one, with
// its figures in docs/reliability.md): quic-go clients against a Profile A
// server in this process. Zero failed requests; after each phase the native
// live-connection and live-request-stream counts return to 0 and RSS to
// within 10% of its level before the phase.
//
// It runs in a child process of its own, so the RSS it compares is the soak
// server's alone, not the test runner's with every other suite's leftovers.
import assert from 'node:assert/strict';
import path from 'node:path';
import { runProcess } from './helpers/process';
import { buildClient, SHORT, SoakReport } from './soak/soak';

async function runShortSoak(): Promise<SoakReport> {
  const script = path.join(__dirname, 'soak', 'soak.ts');
  const r = await runProcess(process.execPath, ['--expose-gc', '--import', 'tsx', script, '--short'], { timeoutMs: 170000 });
  // Exit status 1 means a phase failed its checks: the assertions below say which.
  if (r.code !== 0 && !r.stdout.trim().startsWith('{')) throw new Error(`soak failed: exit ${r.code ?? r.signal}\n${r.stderr}`);
  return JSON.parse(r.stdout) as SoakReport;
}

describe('soak (short): load, connection churn, vanishing clients', function () {
  this.timeout(180000);

  it(`${SHORT.load.conns} conns x ${SHORT.load.streams} streams for ${SHORT.load.seconds} s, ${SHORT.churn.conns} connections opened and closed, ${SHORT.vanish.conns} clients vanishing`, async () => {
    buildClient();
    const report = await runShortSoak();
    const [load, churn, vanish] = report.phases;
    for (const p of report.phases) {
      assert.equal(p.client.failed, 0, `${p.phase}: ${p.client.failure_samples.join('; ')}`);
      assert.ok(p.settleMs >= 0, `${p.phase}: counts did not return to 0: ${JSON.stringify(p.after)}`);
      assert.deepEqual(p.after, { connectionsOpen: 0, requestStreamsOpen: 0, pendingRequests: 0 });
      assert.ok(p.rssChangePct <= 10, `${p.phase}: RSS ${p.rssBeforeMiB.toFixed(1)} -> ${p.rssAfterMiB.toFixed(1)} MiB`);
    }
    // Every route of the mix was exercised and checked.
    assert.equal(Object.keys(load.client.per_case).length, 6);
    assert.ok(load.client.requests > 1000, `${load.client.requests} requests`);
    assert.equal(churn.client.requests, SHORT.churn.conns);
    assert.equal(churn.closes.peer, SHORT.churn.conns);
    // The vanished clients were freed by the idle timeout, not by a close.
    assert.equal(vanish.closes['idle-timeout'], SHORT.vanish.conns);
    assert.equal(vanish.closes.peer ?? 0, 0);
  });
});
