// The library apart from the demo: `h3-node` (src/index.ts) exports the
// library only and `h3-node/demo` (src/demo/index.ts) the demo; no library
// module imports the demo; the server's native callbacks are not reachable
// on it. No addon needed: nothing here listens.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import * as lib from '../../src';
import * as demo from '../../src/demo';

const LIB_DIR = path.resolve(__dirname, '..', '..', 'src', 'lib');

describe('package entries: the library apart from the demo', () => {
  it('the main entry keeps the library exports and has none of the demo', () => {
    const library = [
      'createServer',
      'Http3Server',
      'H3Request',
      'H3Response',
      'MAX_RESPONSE_FIELDS',
      'loadIdentity',
      'stderrLogger',
      'silentLogger',
      'createLogger',
      'startMetrics',
      'createMetricsRegistry',
      'serveMetrics',
      'serve',
      'toRequestListener',
    ];
    for (const name of library) assert.ok(name in lib, `h3-node lacks ${name}`);
    const demoOnly = ['PROFILES', 'BEARER_TOKEN', 'SESSION_COOKIE', 'BODY_CAP', 'DEMO_CERT', 'DEMO_KEY', 'serveDemoPage', 'WebTransportStats'];
    for (const name of demoOnly) {
      assert.ok(!(name in lib), `h3-node exports ${name}`);
      assert.ok(name in demo, `h3-node/demo lacks ${name}`);
    }
  });

  it('no library module imports the demo', () => {
    const files = fs.readdirSync(LIB_DIR).filter((f) => f.endsWith('.ts'));
    assert.ok(files.includes('server.ts'), `unexpected src/lib: ${files}`);
    for (const f of files) {
      assert.doesNotMatch(fs.readFileSync(path.join(LIB_DIR, f), 'utf8'), /from '\.\.\/demo|require\([^)]*demo/, f);
    }
  });

  it("the server's native callbacks are not reachable on it", () => {
    const server = lib.createServer() as unknown as Record<string, unknown>;
    for (const name of ['onBatch', 'onRequest', 'onBody', 'onStreamAborted', 'onConnOpen', 'onConnClosed', 'onLog', 'onServerClosed']) {
      assert.equal(server[name], undefined, name);
    }
    assert.equal(typeof server.listen, 'function');
  });
});
