// The HTTP/3 clients of the framework tests (test/helpers/clients), proven on
// servers that need no framework: the demo exchange's createServer with a
// body callback that hashes each upload as it streams in, and
// createSecureServer with a plain listener that writes a body in timed
// pieces and sends repeated fields. What the framework suite relies on
// each client for: a large body generated while sent arrives whole and in
// order; every field line is reported, duplicates kept and values
// byte-exact; body pieces are timed as they arrive.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { createSecureServer, createServer, H3Request, Http3Server, loadIdentity, silentLogger } from '../../src/index';
import { FetchRequest, FetchResult, headerValues } from './cases';
import type { ClientName, FetchOptions, H3Client } from '../helpers/clients/adapter';
import { aioquicClient } from '../helpers/clients/aioquic';
import { chromiumClient } from '../helpers/clients/chromium';
import { quicGoClient } from '../helpers/clients/quic-go';
import { MiB, patternSha256 } from '../helpers/pattern';
import { closeServer, identity, listen } from './apps/common';

const UPLOAD_BYTES = Number(process.env.H3_FW_PROOF_MIB ?? 32) * MiB;
const CLIENTS: ClientName[] = ['aioquic', 'quic-go', 'Chromium'];

const PIECES = 8;
const PIECE_DELAY_MS = 60;

describe('framework-test HTTP/3 clients (aioquic, quic-go, Chromium), proven without frameworks', function () {
  this.timeout(120000);
  let demo: Http3Server;
  let demoPort: number;
  let compat: ReturnType<typeof createSecureServer>;
  let compatPort: number;
  const clients = new Map<ClientName, H3Client>();
  const fetchWith = (client: ClientName, port: number, reqs: FetchRequest[], upload: FetchOptions['upload'] = 'stream'): Promise<FetchResult[]> =>
    clients.get(client)!.fetch(port, reqs, { upload });

  before(async () => {
    // The demo exchange: the body streams to onBody, which hashes it; the handler answers with the digest.
    const digests = new WeakMap<H3Request, { hash: crypto.Hash; bytes: number }>();
    demo = createServer(
      {
        logger: silentLogger,
        warnDemoIdentity: false,
        onBody: (req, chunk) => {
          let d = digests.get(req);
          if (!d) digests.set(req, (d = { hash: crypto.createHash('sha256'), bytes: 0 }));
          d.hash.update(chunk);
          d.bytes += chunk.length;
        },
      },
      (req, res) => {
        const d = digests.get(req) ?? { hash: crypto.createHash('sha256'), bytes: 0 };
        res.json(200, { bytes: d.bytes, sha256: d.hash.digest('hex') });
      },
    );
    demoPort = (await demo.listen(0, '127.0.0.1')).port;

    // createSecureServer with a plain node:http2-style listener.
    compat = createSecureServer({ ...identity(), tcp: false, warnDemoIdentity: false, logger: silentLogger }, (req, res) => {
      if (req.url === '/pieces') {
        res.setHeader('content-type', 'text/plain');
        let i = 0;
        const next = () => {
          res.write(`piece ${i}\n`);
          if (++i < PIECES) setTimeout(next, PIECE_DELAY_MS);
          else res.end();
        };
        next();
      } else {
        res.setHeader('set-cookie', ['a=1; Path=/; HttpOnly', 'token=QUJDZGVm+/==; Path=/']);
        res.setHeader('x-mixed-case', 'Value With Case');
        res.end('lines');
      }
    });
    compatPort = await listen(compat, {});
    const chromium = chromiumClient();
    await chromium.start([`127.0.0.1:${demoPort}`, `127.0.0.1:${compatPort}`], loadIdentity().spkiSha256);
    clients.set('aioquic', aioquicClient()).set('quic-go', quicGoClient()).set('Chromium', chromium);
  });

  after(async () => {
    for (const c of clients.values()) await c.close();
    await demo?.close();
    if (compat) await closeServer(compat);
  });

  for (const client of CLIENTS) {
    describe(client, () => {
      // Chromium: fetch() with a ReadableStream body (duplex: 'half'), which
      // Chromium sends only over HTTP/2 and HTTP/3 (over HTTP/1.1 the fetch
      // fails: "TypeError: Failed to fetch"); and a Blob made first.
      for (const upload of client === 'Chromium' ? (['stream', 'blob'] as const) : (['stream'] as const)) {
        const how = upload === 'blob' ? 'put in a Blob first' : client === 'Chromium' ? 'generated while sent (a ReadableStream body)' : 'generated while sent';
        it(`uploads ${UPLOAD_BYTES / MiB} MiB ${how}; the demo server's body callback hashes the same bytes`, async function () {
          const req: FetchRequest = { name: 'upload', method: 'POST', path: '/upload', headers: [['content-type', 'application/octet-stream']], uploadBytes: UPLOAD_BYTES };
          const [res] = await fetchWith(client, demoPort, [req], upload);
          assert.equal(res.error, undefined, JSON.stringify(res));
          assert.equal(res.status, 200);
          assert.equal(res.protocol, 'h3');
          assert.deepEqual(JSON.parse(res.body), { bytes: UPLOAD_BYTES, sha256: patternSha256(UPLOAD_BYTES) });
          this.test!.title += ` (${res.totalMs} ms)`;
        });
      }

      it('reports every field line: both set-cookie lines, values byte for byte', async () => {
        const [res] = await fetchWith(client, compatPort, [{ name: 'cookie', method: 'GET', path: '/lines', headers: [] }]);
        assert.equal(res.status, 200, JSON.stringify(res));
        assert.deepEqual(headerValues(res, 'set-cookie'), ['a=1; Path=/; HttpOnly', 'token=QUJDZGVm+/==; Path=/']);
        assert.deepEqual(headerValues(res, 'x-mixed-case'), ['Value With Case']);
        assert.equal(res.body, 'lines');
      });

      it(`times body pieces as they arrive (${PIECES} pieces written ${PIECE_DELAY_MS} ms apart)`, async () => {
        const [res] = await fetchWith(client, compatPort, [{ name: 'stream', method: 'GET', path: '/pieces', headers: [] }]);
        assert.equal(res.status, 200, JSON.stringify(res));
        assert.equal(res.body, Array.from({ length: PIECES }, (_, i) => `piece ${i}\n`).join(''));
        assert.ok(res.chunks.length >= PIECES / 2, `${res.chunks.length} pieces timed`);
        const spread = res.chunks[res.chunks.length - 1].t - res.chunks[0].t;
        assert.ok(spread >= ((PIECES - 1) * PIECE_DELAY_MS) / 2, `pieces spread over ${spread} ms`);
      });
    });
  }
});
