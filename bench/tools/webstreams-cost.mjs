// What Node's web streams alone cost per WebTransport datagram echoed
// through the application API's shape (issue 13, W9): values enqueued 16
// at a time per event-loop turn (as event batches deliver them) into a
// ReadableStream with the session's queue strategy, read by `for await`,
// each written to a WritableStream whose sink does nothing. No network, no
// addon: the floor under which no change to h3-node's own code can take
// W9's datagram path. Beside it the same through the Node-stream shape
// (an object-mode Duplex as session.datagramDuplex() gives: push, 'data',
// write) and through nothing (the values handed to a function), so the
// difference between the shapes is the streams' own. CPU per datagram from
// process.cpuUsage.
//   taskset -c 0 node bench/tools/webstreams-cost.mjs [count]
import { Duplex } from 'node:stream';

const N = Number(process.argv[2] ?? 1_000_000);
const payload = new Uint8Array(64);

/** Calls `deliver` with N copies of the payload, 16 per event-loop turn, then `end`; resolves with CPU microseconds per value. */
function feed(deliver, end) {
  const cpu0 = process.cpuUsage();
  let sent = 0;
  return new Promise((resolve) => {
    const produce = () => {
      for (let i = 0; i < 16 && sent < N; i++, sent++) deliver(new Uint8Array(payload));
      if (sent < N) setImmediate(produce);
      else end(() => {
        const cpu = process.cpuUsage(cpu0);
        resolve((cpu.user + cpu.system) / N);
      });
    };
    produce();
  });
}

async function web() {
  let controller;
  const readable = new ReadableStream({ start: (c) => void (controller = c) }, new CountQueuingStrategy({ highWaterMark: 256 }));
  let sunk = 0;
  const writer = new WritableStream({ write: (d) => void (sunk += d.length) }).getWriter();
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const us = feed((d) => controller.enqueue(d), (report) => { controller.close(); done(report); });
  for await (const d of readable) writer.write(d).catch(() => {});
  await writer.close();
  (await finished)();
  if (sunk !== N * payload.length) throw new Error(`sink saw ${sunk} bytes, expected ${N * payload.length}`);
  return us;
}

async function duplex() {
  let sunk = 0;
  const d = new Duplex({ objectMode: true, readableHighWaterMark: 256, read() {}, write(c, _e, cb) { sunk += c.length; cb(); } });
  d.on('data', (x) => d.write(x));
  const ended = new Promise((resolve) => d.on('end', resolve));
  const us = feed((x) => d.push(x), (report) => { d.push(null); ended.then(report); });
  const r = await us;
  if (sunk !== N * payload.length) throw new Error(`sink saw ${sunk} bytes, expected ${N * payload.length}`);
  return r;
}

async function plain() {
  let sunk = 0;
  return feed((x) => void (sunk += x.length), (report) => report());
}

for (const [label, run] of [['web streams: a ReadableStream (for await) and a WritableStream', web], ['an object-mode Duplex (push, \'data\', write)', duplex], ['no stream (a function call)', plain]]) {
  console.log(`${N} datagrams through ${label}: ${(await run()).toFixed(2)} us of CPU each`);
}
