// The framework test apps (apps/) on node:http2's own
// createSecureServer({ cert, key, allowHTTP1: true }), over TCP: every route
// over HTTP/2 (http2.connect) and HTTP/1.1 (https), including a 100 MiB
// upload generated while sent. This proves the apps right before they meet
// HTTP/3 (frameworks-h3.test.ts).
//
// Express 5 runs over HTTP/1.1 only here: over HTTP/2, Express replaces the
// prototypes of node:http2's compatibility request and response with
// http.IncomingMessage / http.ServerResponse ones, req.method and req.url
// read undefined, and the server process dies of an uncaught TypeError in
// IncomingMessage._read (expressjs/express#3388, #6580). The last suite
// below records that.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import path from 'node:path';
import { appVariants, RunningApp } from './apps';
import { nodeHttp2Serve } from './apps/hono';
import { CaseName, checkCase, checkNotBuffered, request, SMALL_CASES, watchMemory } from './cases';
import { MiB } from '../helpers/pattern';
import { h1Fetch, h2Close, h2Connect, h2Fetch } from './tcp-clients';
import { runJsonProcess } from '../helpers/process';

const UPLOAD_BYTES = Number(process.env.H3_FW_UPLOAD_MIB ?? 100) * MiB;

describe('framework apps on node:http2 createSecureServer, over TCP', function () {
  this.timeout(120000);

  it('the memory check sees Buffers still held, and not those already let go', async () => {
    const held: Buffer[] = [];
    const stop = watchMemory();
    for (let i = 0; i < 64; i++) {
      held.push(Buffer.alloc(MiB, i));
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 600));
    const rise = stop();
    assert.ok(rise.liveArrayBuffersRise >= 60 * MiB, `held 64 MiB, saw ${(rise.liveArrayBuffersRise / MiB).toFixed(1)} MiB`);
    assert.throws(() => checkNotBuffered(100 * MiB, rise), /reachable Buffers rose/);
    held.length = 0;
    const stop2 = watchMemory();
    for (let i = 0; i < 64; i++) {
      Buffer.alloc(MiB, i);
      await new Promise((r) => setTimeout(r, 10));
    }
    await new Promise((r) => setTimeout(r, 600));
    const rise2 = stop2();
    // V8 frees ArrayBuffer memory on a background thread after a collection,
    // so a sample can still count up to one interval's allocations (18 MiB
    // seen on Node 24): far from the 64 MiB held above.
    assert.ok(rise2.liveArrayBuffersRise < 32 * MiB, `let go of 64 MiB, saw ${(rise2.liveArrayBuffersRise / MiB).toFixed(1)} MiB reachable`);
  });

  for (const variant of appVariants(http2.createSecureServer, nodeHttp2Serve)) {
    describe(variant.name, () => {
      let app: RunningApp;
      let session: http2.ClientHttp2Session | undefined;
      const protocols = variant.framework === 'express' ? (['http/1.1'] as const) : (['h2', 'http/1.1'] as const);

      before(async () => {
        app = await variant.start();
        if (protocols.includes('h2' as never)) session = await h2Connect(app.port);
      });
      after(async () => {
        if (session) await h2Close(session);
        await app?.close();
      });

      for (const proto of protocols) {
        const run = (name: CaseName, bytes = 0) => {
          const req = request(name, bytes);
          return proto === 'h2' ? h2Fetch(session!, req) : h1Fetch(app.port, req);
        };
        for (const name of SMALL_CASES) {
          it(`${proto}: ${request(name).method} ${request(name).path}`, async () => {
            const req = request(name);
            checkCase(req, variant.framework, await run(name));
          });
        }
        it(`${proto}: POST /upload of ${UPLOAD_BYTES / MiB} MiB, consumed as a stream`, async function () {
          const req = request('upload', UPLOAD_BYTES);
          const stop = watchMemory();
          const res = await run('upload', UPLOAD_BYTES);
          const rise = stop();
          checkCase(req, variant.framework, res);
          // The client runs in this process too, generating the body chunk by chunk.
          checkNotBuffered(UPLOAD_BYTES, rise);
          this.test!.title += ` (${res.totalMs} ms; Buffers +${(rise.arrayBuffersRise / MiB).toFixed(1)} MiB at peak, +${(rise.liveArrayBuffersRise / MiB).toFixed(1)} MiB reachable)`;
        });
      }
    });
  }

  describe('Express 5 over HTTP/2 on node:http2 (why Express is tested over HTTP/1.1 above)', () => {
    it('GET /hello over HTTP/2 gets no 200: the server process dies of an uncaught exception', async function () {
      const out = await runJsonProcess<{ status: number | null; body: string; uncaught: string[] }>(
        process.execPath,
        ['--require', 'tsx/cjs', path.join(__dirname, 'express-http2-probe.ts')],
        undefined,
        'express-http2-probe',
      );
      // If a future Express or Node makes this pass, test Express over HTTP/2 above.
      assert.notEqual(out.status, 200, JSON.stringify(out));
      assert.ok(out.uncaught.length > 0, JSON.stringify(out));
      this.test!.title += ` (status ${out.status}; ${out.uncaught.join('; ')})`;
    });
  });
});
