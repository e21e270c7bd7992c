// The short soak (seconds, not minutes; `npm run soak` is the full one, with
// its figures in docs/reliability.md): quic-go clients against a Profile A
// server in this process. Zero failed requests; after each phase the native
// live-connection and live-request-stream counts return to 0 and RSS to
// within 10% of its level before the phase.
import assert from 'node:assert/strict';
import { buildClient, runSoak, SHORT } from './soak/soak';

describe('soak (short): load, connection churn, vanishing clients', function () {
  this.timeout(180000);

  it(`${SHORT.load.conns} conns x ${SHORT.load.streams} streams for ${SHORT.load.seconds} s, ${SHORT.churn.conns} connections opened and closed, ${SHORT.vanish.conns} clients vanishing`, async () => {
    buildClient();
    const report = await runSoak(SHORT);
    const [load, churn, vanish] = report.phases;
    for (const p of report.phases) {
      assert.equal(p.client.failed, 0, `${p.phase}: ${p.client.failure_samples.join('; ')}`);
      assert.ok(p.settleMs >= 0, `${p.phase}: counts did not return to 0: ${JSON.stringify(p.after)}`);
      assert.deepEqual(p.after, { connectionsOpen: 0, requestStreamsOpen: 0, pendingRequests: 0 });
      assert.ok(Math.abs(p.rssChangePct) <= 10, `${p.phase}: RSS ${p.rssBeforeMiB.toFixed(1)} -> ${p.rssAfterMiB.toFixed(1)} MiB`);
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
