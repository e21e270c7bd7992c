// W4: one client tries to upload 1 GiB to Profile C. Reports how far past the
// 4096-byte cap the server read, how many bytes reached its socket, when the
// 413 arrived, and the server's RSS before and after.
// Run: npx tsx bench/upload-cap.ts [attempts]
import { createServer, silentLogger } from '../src';
import { profileC } from '../src/demo/profiles';
import { runClient } from '../test/helpers/clients/h3client';

const GiB = 1024 ** 3;

async function main() {
  const attempts = Number(process.argv[2] ?? 3);
  const { options, handler } = profileC.create(silentLogger);
  const server = createServer({ ...options, logger: silentLogger }, handler);
  const { port } = await server.listen(0, '127.0.0.1');
  const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  console.log(`server RSS before: ${mib(rssBefore)}`);
  for (let i = 0; i < attempts; i++) {
    const before = server.counters();
    const result = await runClient(port, {
      timeout: 60,
      requests: [{ method: 'POST', path: '/upload', body_generate: { total: GiB, chunk_size: 16384 } }],
    });
    const res = result.responses[0];
    const after = server.counters();
    const read = after.bodyBytesRead - before.bodyBytesRead;
    console.log(
      `attempt ${i + 1}: status ${res.status} after ${res.elapsed_ms.toFixed(1)} ms; ` +
        `STOP_SENDING code 0x${(res.stop_sending_code ?? 0).toString(16)}; ` +
        `client handed ${res.sent_bytes} of ${GiB} bytes to QUIC; ` +
        `server read ${read} body bytes = ${read - 4096} past the cap; ` +
        `${after.udpBytesReceived - before.udpBytesReceived} UDP bytes received for the whole connection`,
    );
  }
  global.gc?.();
  const rssAfter = process.memoryUsage().rss;
  console.log(`server RSS after: ${mib(rssAfter)} (delta ${mib(rssAfter - rssBefore)})`);
  await server.close();
}

main();
