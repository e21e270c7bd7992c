// What Node's web streams alone cost per WebTransport datagram echoed
// through the application API's shape (issue 13, W9): values enqueued 16
// at a time per event-loop turn (as event batches deliver them) into a
// ReadableStream with the session's queue strategy, read by `for await`,
// each written to a WritableStream whose sink does nothing. No network, no
// addon: the floor under which no change to h3-node's own code can take
// W9's datagram path. CPU per datagram from process.cpuUsage.
//   taskset -c 0 node bench/tools/webstreams-cost.mjs [count]
const N = Number(process.argv[2] ?? 1_000_000);
let controller;
const readable = new ReadableStream({ start: (c) => void (controller = c) }, new CountQueuingStrategy({ highWaterMark: 256 }));
let sunk = 0;
const writer = new WritableStream({ write: (d) => void (sunk += d.length) }).getWriter();
const payload = new Uint8Array(64);
let sent = 0;
function produce() {
  for (let i = 0; i < 16 && sent < N; i++, sent++) controller.enqueue(new Uint8Array(payload));
  if (sent < N) setImmediate(produce);
  else controller.close();
}
const cpu0 = process.cpuUsage();
produce();
for await (const d of readable) writer.write(d).catch(() => {});
await writer.close();
const cpu = process.cpuUsage(cpu0);
if (sunk !== N * payload.length) throw new Error(`sink saw ${sunk} bytes, expected ${N * payload.length}`);
console.log(`${N} datagrams through a ReadableStream (for await) and a WritableStream: ${((cpu.user + cpu.system) / N).toFixed(2)} us of CPU each`);
