// Profile A end to end over real UDP, with aioquic as the client.
import assert from 'node:assert/strict';
import { BEARER_TOKEN, SESSION_COOKIE } from '../../src/demo';
import { handleProfileA } from '../../src/demo/profiles/profile-a';
import { field, request, runClient } from '../helpers/clients/h3client';
import { quicGoClient } from '../helpers/clients/quic-go';
import { onWorkers, startOnWorkers, startServer } from '../helpers/server';
import type { Http3Server } from '../../src';

// Every case runs on one worker and again on two.
for (const workers of [1, 2]) describe(`Profile A over HTTP/3 (aioquic client)${onWorkers(workers)}`, function () {
  let server: Http3Server;
  let port: number;

  before(async () => {
    ({ server, port } = workers === 1 ? await startServer(handleProfileA) : await startOnWorkers({ workers, app: 'a' }));
  });
  after(() => server.close());

  it('/redirect answers 302 with location /target and an empty body', async () => {
    const res = await request(port, { path: '/redirect' });
    assert.equal(res.status, 302);
    assert.equal(field(res, 'location'), '/target');
    assert.equal(res.body_b64, '');
    assert.equal(field(res, 'content-type'), undefined);
    assert.equal(res.ended, true);
  });

  it('/login answers 200 with set-cookie, text/plain and a success text', async () => {
    const res = await request(port, { path: '/login' });
    assert.equal(res.status, 200);
    assert.equal(field(res, 'set-cookie'), SESSION_COOKIE);
    assert.equal(field(res, 'content-type'), 'text/plain');
    assert.match(res.body_text, /login succeeded/);
  });

  it('/secret without credentials answers 401 text/plain', async () => {
    const res = await request(port, { path: '/secret' });
    assert.equal(res.status, 401);
    assert.equal(field(res, 'content-type'), 'text/plain');
    assert.match(res.body_text, /unauthorized/);
  });

  it('any other path answers 404 text/plain', async () => {
    for (const path of ['/', '/target', '/secret/x', '/LOGIN']) {
      const res = await request(port, { path });
      assert.equal(res.status, 404, path);
      assert.equal(field(res, 'content-type'), 'text/plain');
      assert.match(res.body_text, /not found/);
    }
  });

  it('HEAD is routed like GET but answers without content (RFC 9110 section 9.3.2): /login, /secret, a 404; quic-go agrees', async () => {
    const login = await request(port, { method: 'HEAD', path: '/login' });
    assert.equal(login.status, 200);
    assert.equal(field(login, 'set-cookie'), SESSION_COOKIE);
    assert.equal(field(login, 'content-type'), 'text/plain');
    assert.deepEqual({ body: login.body_text, ended: login.ended, reset: login.reset_code }, { body: '', ended: true, reset: null });
    const secret = await request(port, { method: 'HEAD', path: '/secret', headers: [['authorization', `Bearer ${BEARER_TOKEN}`]] });
    assert.deepEqual({ status: secret.status, body: secret.body_text }, { status: 200, body: '' });
    const nope = await request(port, { method: 'HEAD', path: '/nope' });
    assert.deepEqual({ status: nope.status, type: field(nope, 'content-type'), body: nope.body_text }, { status: 404, type: 'text/plain', body: '' });
    const [go] = await quicGoClient().fetch(port, [{ method: 'HEAD', path: '/login', headers: [] }], { timeoutMs: 10000 });
    assert.deepEqual({ status: go.status, bytes: go.bodyBytes, error: go.error }, { status: 200, bytes: 0, error: undefined });
  });

  describe('authorization rule for /secret', () => {
    const cases: { name: string; headers: [string, string][]; status: number }[] = [
      { name: 'exact bearer token', headers: [['authorization', `Bearer ${BEARER_TOKEN}`]], status: 200 },
      { name: 'session cookie alone', headers: [['cookie', SESSION_COOKIE]], status: 200 },
      { name: 'wrong token', headers: [['authorization', 'Bearer nope']], status: 401 },
      { name: 'lowercase "bearer"', headers: [['authorization', `bearer ${BEARER_TOKEN}`]], status: 401 },
      { name: 'token with a trailing space', headers: [['authorization', `Bearer ${BEARER_TOKEN} `]], status: 401 },
      { name: 'token without the scheme', headers: [['authorization', BEARER_TOKEN]], status: 401 },
      { name: 'right cookie among other cookies (whole value compared)', headers: [['cookie', `a=1; ${SESSION_COOKIE}`]], status: 401 },
      {
        name: 'cookie split over two field lines (joined with "; " before comparing)',
        headers: [['cookie', SESSION_COOKIE], ['cookie', 'b=2']],
        status: 401,
      },
      { name: 'wrong cookie value', headers: [['cookie', 'session=wrong']], status: 401 },
      {
        name: 'valid header with a bad cookie',
        headers: [['authorization', `Bearer ${BEARER_TOKEN}`], ['cookie', 'session=wrong']],
        status: 200,
      },
      {
        name: 'bad header with the valid cookie',
        headers: [['authorization', 'Bearer nope'], ['cookie', SESSION_COOKIE]],
        status: 200,
      },
    ];
    for (const c of cases) {
      it(`${c.name} -> ${c.status}`, async () => {
        const res = await request(port, { path: '/secret', headers: c.headers });
        assert.equal(res.status, c.status);
        assert.equal(field(res, 'content-type'), 'text/plain');
        assert.match(res.body_text, c.status === 200 ? /secret/ : /unauthorized/);
      });
    }
  });

  it('routes on the path only: GET, POST, DELETE and an unknown method behave the same', async () => {
    const methods = ['GET', 'POST', 'DELETE', 'FROBNICATE'];
    const result = await runClient(port, {
      requests: methods.flatMap((method) => [
        { method, path: '/login' },
        { method, path: '/redirect' },
        { method, path: '/nowhere' },
      ]),
    });
    const statuses = result.responses.map((r) => r.status);
    assert.deepEqual(statuses, methods.flatMap(() => [200, 302, 404]));
  });

  it('sends every response field name and value in lowercase on the wire', async () => {
    const result = await runClient(port, {
      requests: [{ path: '/login' }, { path: '/redirect' }, { path: '/secret' }, { path: '/x' }],
    });
    for (const res of result.responses) {
      assert.ok(res.headers.length >= 2);
      for (const [name, value] of res.headers) {
        assert.equal(name, name.toLowerCase(), `field name ${name}`);
        assert.equal(value, value.toLowerCase(), `field value ${value}`);
      }
    }
  });

  it('answers 413 when a buffered body exceeds the 16 KiB window and keeps serving', async () => {
    const big = Buffer.alloc(16 * 1024 + 1, 0x61).toString('base64');
    const ok = Buffer.alloc(16 * 1024, 0x61).toString('base64');
    const result = await runClient(port, {
      requests: [
        { method: 'POST', path: '/login', body_b64: big },
        { method: 'POST', path: '/login', body_b64: ok },
      ],
    });
    assert.equal(result.responses[0].status, 413);
    assert.equal(result.responses[1].status, 200);
  });
});
