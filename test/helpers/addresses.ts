// What test/integration/addresses.test.ts and migration.test.ts share: the
// addresses-server fixture as a process of its own (inside a network
// namespace when one is given), its counters read over HTTP/3, and the
// checks on a runner client's result.
import assert from 'node:assert/strict';
import path from 'node:path';
import type { NativeCounters } from '../../src/native/binding';
import { runClient } from './clients/h3client';
import type { RunnerResult } from './clients/adapter';
import { fileSha256 } from './fixtures/runner-files';
import type { Namespace } from './netns';
import { ManagedProcess, startProcess } from './process';

const FIXTURE = path.join(__dirname, 'fixtures', 'addresses-server.ts');

export interface AddressesServer {
  port: number;
  /** The server's counters (all workers'), asked of it at `host`. */
  counters(host: string): Promise<NativeCounters>;
  stop(): Promise<void>;
}

export interface AddressesServerOptions {
  /** Where it listens: `::`, `0.0.0.0` or one address. */
  host: string;
  workers?: number;
  steering?: 'auto' | 'forwarding';
  /** Run inside this namespace (the server then listens on 4433). */
  ns?: Namespace;
}

export async function startAddressesServer(o: AddressesServerOptions): Promise<AddressesServer> {
  const args = ['--import', 'tsx', FIXTURE, o.host, o.ns ? '4433' : '0', String(o.workers ?? 1), o.steering ?? 'auto'];
  const label = `addresses-server ${o.host}${o.ns ? ` in ${o.ns.name}` : ''}`;
  const proc: ManagedProcess = o.ns
    ? startProcess('ip', ['netns', 'exec', o.ns.name, process.execPath, ...args], { label })
    : startProcess(process.execPath, args, { label });
  const { listening } = (await proc.waitForJson((line) => 'listening' in line, 30_000)) as { listening: number };
  return {
    port: listening,
    async counters(host: string) {
      const result = await runClient(listening, { timeout: 10, requests: [{ path: '/counters' }] }, host);
      const res = result.responses[0];
      assert.equal(res?.status, 200, `GET /counters at ${host}: ${result.handshake_error ?? JSON.stringify(res)}`);
      return JSON.parse(res.body_text) as NativeCounters;
    },
    stop: async () => {
      await proc.stop();
    },
  };
}

/** "ip:port" as the runner clients print a source address (IPv6 in brackets). */
export function hostPort(ip: string, port: number): string {
  return ip.includes(':') ? `[${ip}]:${port}` : `${ip}:${port}`;
}

/** Every response 200 with the exact bytes of /<n>-<tag>; every connection without error. */
export function assertAllExact(result: RunnerResult, what: string): void {
  assert.equal(result.error, null, `${what}: ${result.error}`);
  const failed = result.responses.filter((r) => {
    const n = Number(/^\/(\d+)/.exec(r.path)?.[1]);
    return r.status !== 200 || r.error !== null || r.length !== n || r.sha256 !== fileSha256(n);
  });
  assert.deepEqual(failed.slice(0, 5), [], `${what}: ${failed.length} of ${result.responses.length} responses failed or were not exact`);
  const broken = result.connections.map((c, i) => ({ i, ...c })).filter((c) => c.error !== null || !c.handshake);
  assert.deepEqual(broken.slice(0, 5), [], `${what}: ${broken.length} of ${result.connections.length} connections failed`);
}
