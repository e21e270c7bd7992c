// What a node:http2-shaped request/response pair costs by itself: the
// lifecycle Node's stream classes go through for one GET, with nothing of
// this project in it, beside the lifecycle of the demo exchange's own two
// objects (H3Request, H3Response from dist/). The difference is the part of
// "CPU per request through createSecureServer vs through createServer" (W1,
// W3) that no implementation of the compatibility API can avoid: it is
// built from Node's classes because applications rely on them (the request
// is a Readable that ends; the response emits 'finish' and 'close').
//   node bench/tools/compat-floor.mjs [requests per pass] [passes]
// Requests run 20 per event-loop turn (W1 has 20 streams in flight), so the
// process.nextTick work the stream classes schedule is counted.
import { Readable, Stream } from 'node:stream';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const root = new URL('../../', import.meta.url).pathname;
const { H3Request } = require(`${root}dist/lib/request.js`);
const { H3Response } = require(`${root}dist/lib/response.js`);

const perPass = Number(process.argv[2] ?? 200_000);
const passes = Number(process.argv[3] ?? 7);
const PER_TURN = 20;
const LINES = [':method', 'GET', ':scheme', 'https', ':authority', '127.0.0.1:4433', ':path', '/login', 'user-agent', 'loadclient'];
const BODY = Buffer.from('login succeeded\n');
const FIELDS = ['content-type', 'text/plain', 'set-cookie', 'session=h3-demo-7b41e0'];

/** The least a node:http2-compatible request does for a complete GET. */
class FloorRequest extends Readable {
  _read() {}
}
/** node:http2's Http2ServerResponse is a legacy Stream (an EventEmitter). */
class FloorResponse extends Stream {}

function nodePair(done) {
  const req = new FloorRequest();
  req.push(null); // a GET: the body is complete with the header section
  const res = new FloorResponse();
  // The listener answers; the response finishes and closes, and the
  // request nobody read is resumed so that it ends and closes too (what
  // node:http and node:http2 do for an unread request).
  res.emit('finish');
  process.nextTick(() => res.emit('close'));
  req.on('close', done);
  req.resume();
}

function demoPair(done) {
  const req = new H3Request(1, 0, LINES, undefined);
  const res = new H3Response((r, fields, body) => {
    if (fields.length < 0 || body.length < 0) throw new Error('unreachable');
    process.nextTick(done);
  });
  if (req.method !== 'GET') throw new Error('bad request');
  res.contentType = 'text/plain';
  res.addField(FIELDS[2], FIELDS[3]);
  res.end(BODY);
}

function pass(make) {
  return new Promise((resolve) => {
    let started = 0;
    let finished = 0;
    const t0 = process.cpuUsage();
    const turn = () => {
      for (let i = 0; i < PER_TURN && started < perPass; i++, started++) {
        make(() => {
          if (++finished === perPass) {
            const u = process.cpuUsage(t0);
            resolve(((u.user + u.system) / perPass) * 1000); // ns per request
          }
        });
      }
      if (started < perPass) setImmediate(turn);
    };
    turn();
  });
}

const results = { node: [], demo: [] };
for (let p = 0; p < passes; p++) {
  // Alternating, so that drift of the machine hits both alike.
  results.node.push(await pass(nodePair));
  results.demo.push(await pass(demoPair));
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (ns) => `${(ns / 1000).toFixed(2)} us`;
const node = median(results.node);
const demo = median(results.demo);
process.stdout.write(
  `${JSON.stringify({ requests_per_pass: perPass, passes, node_stream_pair_ns: Math.round(node), demo_pair_ns: Math.round(demo) })}\n` +
    `Node stream pair (Readable + Stream, GET lifecycle): ${fmt(node)} per request (median of ${passes})\n` +
    `demo pair (H3Request + H3Response):                  ${fmt(demo)} per request\n` +
    `floor of the compat layer's extra JavaScript:        ${fmt(node - demo)} per request\n`,
);
