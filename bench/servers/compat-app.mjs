// The request listener both node:http2-shaped servers run, byte for byte:
// this project's createSecureServer (bench/servers/h3-node-compat.mjs) and
// node:http2's (bench/peers/node-http2-compat.mjs). It is written the way a
// Node developer writes one (writeHead/end, 'data' or `for await` on the
// request, pipeline into the response), so the rows compare the servers,
// not two programs.
//   Profile A (W1): /redirect, /login, /secret, 404 otherwise
//   Profile C (W3): POST /count, streamed count, 413 past 4096 bytes
//   W8:             POST /upload, streamed count with no cap (nothing kept)
//                   GET /file, pipeline(fs.createReadStream(file), res)
import fs from 'node:fs';
import { pipeline } from 'node:stream';

const BEARER = 'Bearer h3-demo-token-2f9c';
const COOKIE = 'session=h3-demo-7b41e0';
const CAP = 4096;
const TEXT = { 'content-type': 'text/plain' };

/** `file`: what GET /file sends (W8's download); without it /file is 404. */
export function createApp(file) {
  const fileSize = file ? fs.statSync(file).size : 0;

  return (req, res) => {
    const q = req.url.indexOf('?');
    switch (q === -1 ? req.url : req.url.slice(0, q)) {
      case '/redirect':
        res.writeHead(302, { location: '/target' });
        res.end();
        return;
      case '/login':
        // An object literal, not `{ ...TEXT, 'set-cookie': COOKIE }`: in
        // Node 20's V8 a spread followed by one more property sends every
        // scavenge into promoting (docs/design.md, "An object spread in the
        // benchmark's application"), a cost of the application's code that
        // both servers running this listener paid.
        res.writeHead(200, { 'content-type': 'text/plain', 'set-cookie': COOKIE });
        res.end('login succeeded\n');
        return;
      case '/secret':
        if (req.headers.authorization === BEARER || req.headers.cookie === COOKIE) {
          res.writeHead(200, TEXT);
          res.end('secret: the owl flies at midnight\n');
        } else {
          res.writeHead(401, TEXT);
          res.end('unauthorized\n');
        }
        return;
      case '/count':
        count(req, res);
        return;
      case '/upload':
        upload(req, res).catch((e) => process.stderr.write(`upload: ${e.message}\n`));
        return;
      case '/file':
        if (!file) break;
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': fileSize });
        // pipeline: the file is read only as fast as the response drains
        // (write() false -> 'drain'), so memory stays flat whatever the size.
        pipeline(fs.createReadStream(file), res, (e) => e && process.stderr.write(`file: ${e.message}\n`));
        return;
    }
    res.writeHead(404, TEXT);
    res.end('not found\n');
  };
}

// Profile C with 'data' events, as node-http-c.mjs and node-http2.mjs count.
// (W3 sends exactly 4096 bytes, so the 413 branch is not what it measures.)
function count(req, res) {
  let total = 0;
  let cut = false;
  req.on('data', (chunk) => {
    if (cut) return;
    total += chunk.length;
    if (total > CAP) {
      cut = true;
      res.writeHead(413, TEXT);
      res.end('too large\n');
    }
  });
  req.on('end', () => {
    if (cut) return;
    res.writeHead(200, TEXT);
    res.end(`${total}\n`);
  });
}

// W8's upload: the async iterator pulls one chunk at a time, so the request
// is read only as fast as this loop runs (backpressure to the client).
async function upload(req, res) {
  let total = 0;
  for await (const chunk of req) total += chunk.length;
  res.writeHead(200, TEXT);
  res.end(`${total}\n`);
}
