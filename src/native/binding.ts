// Loads the napi-rs addon built by `npm run build:native` into dist/native/.
// The path is resolved from the package root so the same loader works from
// src/ (tests under tsx) and from dist/ (the published package).
import fs from 'node:fs';
import path from 'node:path';

export interface NativeOptions {
  host: string;
  port: number;
  certPath: string;
  keyPath: string;
  streamedBodies: boolean;
  bodyWindow?: number;
  bodyCredit?: number;
  idleTimeoutMs?: number;
  handshakeTimeoutMs?: number;
  maxConnections?: number;
  maxStreamsPerConnection?: number;
  maxFieldSectionSize?: number;
  streamWindow?: number;
  panicOnPath?: string;
  webtransport?: boolean;
  keylogPath?: string;
  qlogDir?: string;
  /** Benchmark only: 'a' or 'c' makes Rust answer Profile A / C itself. */
  benchNativeHandler?: string;
}

export interface NativeAddress {
  address: string;
  family: string;
  port: number;
}

export interface NativeCounters {
  udpBytesReceived: number;
  udpDatagramsReceived: number;
  udpDatagramsSent: number;
  /** Sends that carried several datagrams at once (UDP GSO). */
  udpGsoSends: number;
  bodyBytesRead: number;
  connectionsAccepted: number;
  connectionsOpen: number;
  /** Connections closed before their handshake completed. */
  handshakeFailures: number;
  /** UDP payload bytes sent. */
  udpBytesSent: number;
  /** Request streams (WebTransport CONNECT streams included) the native core holds state for now. */
  requestStreamsOpen: number;
  /** Connections dropped because their handshake did not complete within handshakeTimeoutMs. */
  handshakeTimeouts: number;
  /** Datagrams counted for open WebTransport sessions. */
  wtDatagramsReceived: number;
  /** DATAGRAM frames quiche reports received (its Stats::dgram_recv). */
  quicDatagramsReceived: number;
  /** Responses the native core wrote itself, by status: 200 opening a WebTransport session, 413 over the body window, 429 past the session cap, 431 over the field-section size, 501 for CONNECT. */
  nativeResponses200: number;
  nativeResponses413: number;
  nativeResponses429: number;
  nativeResponses431: number;
  nativeResponses501: number;
}

export interface NativeServer {
  address(): NativeAddress;
  counters(): NativeCounters;
  submit(commands: Buffer | null, ackedBatch: number): void;
  shutdown(graceful: boolean): void;
  join(): void;
}

export interface NativeLimits {
  webtransportSessionsCap: number;
  webtransportPeerStreamsCap: number;
  defaultBodyWindow: number;
  defaultBodyCredit: number;
  defaultMaxFieldSectionSize: number;
  defaultHandshakeTimeoutMs: number;
}

interface Addon {
  listen(options: NativeOptions, onEvents: (batch: Buffer) => void): NativeServer;
  limits(): NativeLimits;
}

const packageRoot = path.resolve(__dirname, '..', '..');

function findAddon(): string {
  const dir = path.join(packageRoot, 'dist', 'native');
  const prefix = `h3core.${process.platform}-${process.arch}`;
  const found = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.node')) : [];
  if (found.length === 0) {
    throw new Error(`native addon ${prefix}*.node not found in ${dir}; run \`npm run build\` first`);
  }
  return path.join(dir, found.sort()[0]);
}

let loaded: Addon | undefined;

/** The addon in dist/native, or the one at `addonPath` (a benchmark variant; see src/lib/dev-hooks.ts). */
export function addon(addonPath?: string): Addon {
  if (addonPath !== undefined) {
    const file = path.resolve(addonPath);
    if (!fs.existsSync(file)) throw new Error(`native addon ${file} not found`);
    return require(file) as Addon;
  }
  loaded ??= require(findAddon()) as Addon;
  return loaded;
}

export { packageRoot };
