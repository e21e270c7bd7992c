// Let's Encrypt's ACME test server, Pebble (scripts/setup-pebble.sh builds
// it), for one test: Pebble on its own ports with a listener certificate
// from the run's test CA, and pebble-challtestsrv as its DNS server,
// answering every name with 127.0.0.1 (so a made-up domain reaches the app
// under test). Pebble validates HTTP-01 challenges on `challengePort`.
// Each issued chain ends at a root Pebble makes at start, readable from
// its management interface.
import fs from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { ROOT } from './paths';
import { ManagedProcess, startProcess } from './process';
import type { TestCa } from './test-ca';

export const PEBBLE_DIR = path.join(ROOT, '.cache', 'pebble');

export interface Pebble {
  directoryUrl: string;
  /** Trust for Pebble's own HTTPS listener. */
  serverCa: Buffer;
  /** The root every certificate Pebble issues chains to (PEM). */
  root(): Promise<string>;
  stop(): Promise<void>;
}

/** A TCP port free on 127.0.0.1 now (Pebble's listeners, the HTTP-01 responder). */
export async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

export async function startPebble(ca: TestCa, challengePort: number): Promise<Pebble> {
  const binary = path.join(PEBBLE_DIR, 'pebble');
  if (!fs.existsSync(binary)) throw new Error(`${binary} is missing: run scripts/setup-pebble.sh (part of scripts/setup.sh)`);
  const listener = ca.issue('pebble', 'localhost', ['localhost']);
  const [acmePort, managementPort, dnsPort, dnsManagement] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
  const config = path.join(ca.dir, 'pebble.json');
  fs.writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${acmePort}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: listener.cert,
        privateKey: listener.key,
        httpPort: challengePort,
        tlsPort: 5001,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
      },
    }),
  );
  const dns = startProcess(
    path.join(PEBBLE_DIR, 'pebble-challtestsrv'),
    ['-defaultIPv4', '127.0.0.1', '-defaultIPv6', '', '-dnsserver', `127.0.0.1:${dnsPort}`, '-doh', '', '-http01', '', '-https01', '', '-tlsalpn01', '', '-management', `127.0.0.1:${dnsManagement}`],
    { label: 'pebble-challtestsrv' },
  );
  // No sleeps between validation attempts, and every nonce accepted: a
  // test's pace, not a production CA's.
  const pebble: ManagedProcess = startProcess(binary, ['-config', config, '-dnsserver', `127.0.0.1:${dnsPort}`], {
    label: 'pebble',
    env: { PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
  });
  await pebble.waitFor(/Listening on/, { timeoutMs: 20_000 });
  const serverCa = fs.readFileSync(ca.ca.cert);
  return {
    directoryUrl: `https://localhost:${acmePort}/dir`,
    serverCa,
    root: () =>
      new Promise((resolve, reject) => {
        https
          .get({ host: '127.0.0.1', port: managementPort, path: '/roots/0', servername: 'localhost', ca: serverCa }, (res) => {
            let body = '';
            res.setEncoding('utf8');
            res.on('data', (d: string) => (body += d));
            res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`pebble /roots/0: ${res.statusCode}`))));
          })
          .once('error', reject);
      }),
    stop: async () => {
      await pebble.stop();
      await dns.stop();
    },
  };
}
