// The fetch handler (Request in, Response out) that every fetch-shaped
// server in the bench runs, byte for byte: this project's serve({ fetch })
// (bench/servers/h3-node-fetch.mjs) and Bun's Bun.serve({ http3: true })
// (bench/peers/bun-fetch.mjs), so their rows compare the servers, not two
// programs. Written the way such handlers are written: a switch on the path,
// `new Response(...)`, the upload read with `for await`.
//   Profile A (W1): /redirect, /login, /secret, 404 otherwise
//   Profile C (W3): POST /count, the body counted as it streams, 413 past 4096 bytes

const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';
const CAP = 4096;
const TEXT = { 'content-type': 'text/plain' };

async function count(request) {
  let total = 0;
  // The body read as it arrives; a reader that stops early cancels the rest.
  for await (const chunk of request.body ?? []) {
    total += chunk.length;
    if (total > CAP) return new Response('too large\n', { status: 413, headers: TEXT });
  }
  return new Response(`${total}\n`, { headers: TEXT });
}

export function app(request) {
  const url = request.url;
  // The path without scheme, authority and query, as the routes need it.
  const start = url.indexOf('/', url.indexOf('//') + 2);
  const q = url.indexOf('?', start);
  switch (q === -1 ? url.slice(start) : url.slice(start, q)) {
    case '/redirect':
      return new Response(null, { status: 302, headers: { location: '/target' } });
    case '/login':
      return new Response('login succeeded\n', { headers: { 'content-type': 'text/plain', 'set-cookie': COOKIE } });
    case '/secret': {
      const ok = request.headers.get('authorization') === BEARER || request.headers.get('cookie') === COOKIE;
      return ok ? new Response('secret: the owl flies at midnight\n', { headers: TEXT }) : new Response('unauthorized\n', { status: 401, headers: TEXT });
    }
    case '/count':
      return count(request);
  }
  return new Response('not found\n', { status: 404, headers: TEXT });
}
