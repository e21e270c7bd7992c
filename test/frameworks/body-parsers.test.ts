// Request bodies of unknown length (no content-length: how fetch() sends a
// ReadableStream and how most HTTP/3 clients upload) reach the body
// parsers apps use: express.json(), express.urlencoded() and express.text()
// on createSecureServer, and Fastify's own JSON parser, from headless
// Chromium (fetch with duplex: 'half') and aioquic. The parsers built on
// type-is read a body only when the request says one is coming
// (content-length or transfer-encoding); the compat layer's headers object
// says `transfer-encoding: chunked` for such a body. node:http2's compat
// has the same gap and does not close it: shown at the end with
// body-parser on node:http2 and Node's own client.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import bodyParser from 'body-parser';
import express from 'express';
import Fastify, { FastifyInstance } from 'fastify';
import { createSecureServer, Http3SecureServer, loadIdentity } from '../../src/index';
import { ClientName, ClientRequest, H3Client } from '../helpers/clients/adapter';
import { aioquicClient } from '../helpers/clients/aioquic';
import { ChromiumClient, chromiumClient } from '../helpers/clients/chromium';
import { closeServer, identity, listen } from './apps/common';

const JSON_TEXT = JSON.stringify({ name: 'h3-node', list: [1, 2, 3] });

function expressParsers(): express.Express {
  const app = express();
  app.use(express.json(), express.urlencoded({ extended: false }), express.text());
  app.post('/echo', (req, res) => {
    res.json({
      body: req.body ?? null,
      te: req.headers['transfer-encoding'] ?? null,
      length: req.headers['content-length'] ?? null,
      rawHasTe: req.rawHeaders.some((n, i) => i % 2 === 0 && n.toLowerCase() === 'transfer-encoding'),
    });
  });
  app.get('/plain', (req, res) => res.json({ te: req.headers['transfer-encoding'] ?? null }));
  return app;
}

const streamed = (contentType: string, body: string): ClientRequest => ({
  method: 'POST',
  path: '/echo',
  headers: [['content-type', contentType]],
  body,
  contentLength: false,
});

describe('bodies of unknown length reach body parsers (express.json/urlencoded/text, Fastify) over HTTP/3', function () {
  this.timeout(120000);
  let expressServer: Http3SecureServer;
  let expressPort = 0;
  let fastify: FastifyInstance;
  let fastifyPort = 0;
  const clients = new Map<ClientName, H3Client>();
  let chromium: ChromiumClient;

  before(async () => {
    expressServer = createSecureServer({ ...identity(), warnDemoIdentity: false }, expressParsers() as never);
    expressPort = await listen(expressServer, {});
    fastify = Fastify({
      serverFactory: ((handler: never) => createSecureServer({ ...identity(), warnDemoIdentity: false }, handler)) as never,
    }) as unknown as FastifyInstance;
    fastify.post('/echo', async (req) => ({ body: req.body, te: req.headers['transfer-encoding'] ?? null }));
    await fastify.listen({ port: 0, host: '127.0.0.1' });
    fastifyPort = (fastify.server.address() as { port: number }).port;
    chromium = chromiumClient();
    await chromium.start([`127.0.0.1:${expressPort}`, `127.0.0.1:${fastifyPort}`], loadIdentity().spkiSha256);
    clients.set('aioquic', aioquicClient()).set('Chromium', chromium);
  });

  after(async () => {
    await chromium?.close();
    await fastify?.close();
    if (expressServer) await closeServer(expressServer);
  });

  for (const name of ['aioquic', 'Chromium'] as ClientName[]) {
    const how = name === 'Chromium' ? "fetch() with a ReadableStream body (duplex: 'half')" : 'DATA frames and FIN, no content-length';
    it(`${name}, ${how}: express.json(), express.urlencoded() and express.text() parse it`, async () => {
      const [json, form, text] = await clients.get(name)!.fetch(expressPort, [
        streamed('application/json', JSON_TEXT),
        streamed('application/x-www-form-urlencoded', 'a=1&b=two'),
        streamed('text/plain', 'plain words'),
      ]);
      for (const r of [json, form, text]) assert.equal(r.status, 200, r.error ?? r.body);
      const seen = [json, form, text].map((r) => JSON.parse(r.body));
      assert.deepEqual(seen[0].body, JSON.parse(JSON_TEXT));
      assert.deepEqual(seen[1].body, { a: '1', b: 'two' });
      assert.equal(seen[2].body, 'plain words');
      for (const s of seen) {
        assert.deepEqual({ te: s.te, length: s.length, rawHasTe: s.rawHasTe }, { te: 'chunked', length: null, rawHasTe: false }, 'the headers object says a body is coming; rawHeaders is as received');
      }
    });

    it(`${name}, ${how}: Fastify's JSON parser parses it`, async () => {
      const [r] = await clients.get(name)!.fetch(fastifyPort, [streamed('application/json', JSON_TEXT)]);
      assert.equal(r.status, 200, r.error ?? r.body);
      assert.deepEqual(JSON.parse(r.body).body, JSON.parse(JSON_TEXT));
    });
  }

  it('a body with its content-length keeps it (no transfer-encoding), and a request that ended with its header section says nothing of a body', async () => {
    const [withLength, plain] = await clients.get('aioquic')!.fetch(expressPort, [
      { method: 'POST', path: '/echo', headers: [['content-type', 'application/json']], body: JSON_TEXT },
      { method: 'GET', path: '/plain', headers: [] },
    ]);
    const a = JSON.parse(withLength.body);
    assert.deepEqual({ te: a.te, length: a.length, body: a.body }, { te: null, length: String(JSON_TEXT.length), body: JSON.parse(JSON_TEXT) });
    assert.deepEqual(JSON.parse(plain.body), { te: null });
  });

  it("node:http2's compat has the same gap and leaves it open: body-parser there skips a body sent without content-length", async () => {
    const { key, cert } = identity();
    const parse = bodyParser.json();
    const server = http2.createSecureServer({ key, cert }, (req, res) => {
      parse(req as never, res as never, () => res.end(JSON.stringify({ body: (req as { body?: unknown }).body ?? null, te: req.headers['transfer-encoding'] ?? null })));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    try {
      const session = http2.connect(`https://127.0.0.1:${(server.address() as { port: number }).port}`, { rejectUnauthorized: false });
      const stream = session.request({ ':method': 'POST', ':path': '/', 'content-type': 'application/json' });
      stream.end(JSON_TEXT); // Node's client sends no content-length for a streamed body
      let text = '';
      stream.setEncoding('utf8');
      stream.on('data', (d) => (text += d));
      await new Promise((ok) => stream.on('end', ok));
      session.close();
      // body-parser (type-is hasBody) saw no sign of a body: req.body stays unset.
      assert.deepEqual(JSON.parse(text), { body: null, te: null });
    } finally {
      await new Promise((ok) => server.close(ok));
    }
  });
});
