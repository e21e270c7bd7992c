// The transport options every server of the package takes (createServer,
// createSecureServer, serve): keys, congestion control and pacing, address
// validation, resumption and 0-RTT, routable connection IDs. Documented
// once here; checked here, so a mistake is a TypeError naming the option;
// handed to the addon by addonTransportOptions.

import { addon } from '../native/binding';
import { WORKER_STEERINGS } from './workers';
import type { WorkerOptions } from './workers';

export interface TransportOptions extends WorkerOptions {
  /**
   * Key for stateless reset tokens (RFC 9000 section 10.3): 32 bytes, as a
   * Buffer or 64 hex digits. A server restarted with the same key resets
   * the connections of the one before it, so their clients retry at once
   * rather than at their idle timeout. Absent: a random key per process.
   */
  statelessResetKey?: Buffer | string;
  /**
   * quiche's congestion controller: 'cubic' (the default, as Linux TCP and
   * quic-go), 'reno', or 'bbr2' (quiche's BBRv2). See docs/reliability.md.
   */
  congestionControl?: CongestionControl;
  /**
   * Packets leave at the times quiche's pacer gives them, so no burst is
   * larger than the congestion controller allows (default true; false sends
   * each loop turn's packets at once). See docs/reliability.md.
   */
  pacing?: boolean;
  /**
   * The congestion window each connection starts with, in packets (2 to
   * 128). Default 10, as RFC 9002 section 7.2 recommends; quic-go (Caddy)
   * and Chromium start with 32, which saves about two round trips of slow
   * start on a fast path (docs/reliability.md, "Initial window").
   */
  initialWindow?: number;
  /**
   * Connection IDs in the QUIC-LB plaintext format
   * (draft-ietf-quic-load-balancers): a load balancer given the same
   * `configId` and this server's `serverId` (1-15 bytes) routes every packet
   * of a connection to this server, before and after a migration. Absent:
   * random IDs. See docs/design.md, "Connection IDs a balancer can route".
   */
  quicLb?: QuicLbOptions;
  /**
   * Address validation (RFC 9000 section 8.1.2): `'auto'` (the default)
   * answers a client's first Initial with a Retry once `retryThreshold`
   * handshakes (default 128) are under way at once, so a flood of spoofed
   * Initials cannot fill the connection table while ordinary clients save
   * the round trip; `'on'` always; `'off'` never. Retry tokens are keyed by
   * `retryTokenKey` (32 bytes, Buffer or 64 hex digits; random per process
   * when omitted; give every server behind one balancer the same key).
   */
  retry?: RetryMode;
  retryThreshold?: number;
  retryTokenKey?: Buffer | string;
  /**
   * TLS session ticket secret, 48 bytes (a Buffer or 96 hex digits): the
   * server derives a ticket key per `ticketKeyRotation` period from it, seals
   * new tickets under the current one and still opens tickets of the
   * previous (and next) period, renewing them. Every server given the same
   * secret, with clocks within a period of each other, resumes the others'
   * sessions and those of its own earlier runs (a resumed handshake skips
   * the certificate). Absent: BoringSSL's own key, random per process and
   * rotated by it (with workers, one random secret per server, rotated the
   * same way).
   */
  ticketKey?: Buffer | string;
  /** Seconds each ticket key derived from `ticketKey` seals new tickets (default 43,200: 12 hours). */
  ticketKeyRotation?: number;
  /**
   * 0-RTT (TLS early data) from clients resuming a session: `'safe'` (the
   * default) answers GET, HEAD and OPTIONS sent in early data and answers
   * other methods `425 Too Early` (RFC 8470), so the client sends them
   * again after the handshake; `'all'` hands every request to the
   * application, which must then treat `req.earlyData` requests as
   * possible replays; `'off'` refuses early data.
   */
  earlyData?: EarlyDataMode;
}

/** The transport options of any server's options, for its core. */
export function pickTransportOptions(o: TransportOptions): TransportOptions {
  return {
    statelessResetKey: o.statelessResetKey,
    congestionControl: o.congestionControl,
    pacing: o.pacing,
    initialWindow: o.initialWindow,
    quicLb: o.quicLb,
    retry: o.retry,
    retryThreshold: o.retryThreshold,
    retryTokenKey: o.retryTokenKey,
    ticketKey: o.ticketKey,
    ticketKeyRotation: o.ticketKeyRotation,
    earlyData: o.earlyData,
    workers: o.workers,
    workerEntry: o.workerEntry,
    workerSteering: o.workerSteering,
  };
}

/** The transport options checked and in the shape the addon's listen() takes. */
export function addonTransportOptions(o: TransportOptions) {
  return {
    statelessResetKey: keyOf('statelessResetKey', o.statelessResetKey),
    congestionControl: oneOf('congestionControl', CONGESTION_CONTROLS, o.congestionControl),
    pacing: pacingOf(o.pacing),
    initialWindow: initialWindowOf(o.initialWindow),
    ...quicLbOf(o.quicLb),
    retry: oneOf('retry', RETRY_MODES, o.retry),
    retryThreshold: o.retryThreshold,
    retryTokenKey: keyOf('retryTokenKey', o.retryTokenKey),
    ticketKey: keyOf('ticketKey', o.ticketKey, 48),
    ticketKeyRotationS: rotationOf(o.ticketKeyRotation),
    earlyData: oneOf('earlyData', EARLY_DATA_MODES, o.earlyData),
  };
}

/** workerSteering checked: false when packets must go by forwarding, true to try the kernel's eBPF steering first. */
export function wantsEbpfSteering(o: TransportOptions): boolean {
  return oneOf('workerSteering', WORKER_STEERINGS, o.workerSteering) !== 'forwarding';
}

/** Connection IDs a QUIC-LB load balancer can route (draft-ietf-quic-load-balancers, plaintext). */
export interface QuicLbOptions {
  /** The configuration rotation codepoint, 0 to 6. */
  configId: number;
  /** This server's ID: 1 to 15 bytes, as a Buffer or hex digits. */
  serverId: Buffer | string;
}

/** quicLb as the addon takes it; the addon checks the ranges and names them. */
function quicLbOf(lb: QuicLbOptions | undefined): { quicLbConfigId?: number; quicLbServerId?: Buffer } {
  if (lb === undefined) return {};
  const { configId, serverId } = lb;
  if (!Number.isInteger(configId)) throw new TypeError(`quicLb.configId must be an integer from 0 to 6, got ${JSON.stringify(configId)}`);
  const id = typeof serverId === 'string' && /^([0-9a-fA-F]{2})+$/.test(serverId) ? Buffer.from(serverId, 'hex') : serverId;
  if (!Buffer.isBuffer(id)) throw new TypeError('quicLb.serverId must be a Buffer or an even number of hex digits');
  return { quicLbConfigId: configId, quicLbServerId: id };
}

/** When first Initials get a Retry (address validation, RFC 9000 section 8.1.2). */
export const RETRY_MODES = ['off', 'on', 'auto'] as const;
export type RetryMode = (typeof RETRY_MODES)[number];


/** 0-RTT: which requests may be answered before the handshake completes. */
export const EARLY_DATA_MODES = ['safe', 'all', 'off'] as const;
export type EarlyDataMode = (typeof EARLY_DATA_MODES)[number];


/** quiche's congestion controllers, by the names the option takes. */
export const CONGESTION_CONTROLS = ['cubic', 'reno', 'bbr2'] as const;
export type CongestionControl = (typeof CONGESTION_CONTROLS)[number];

/** A choice checked here, so a typo is a TypeError naming the choices. */
function oneOf<T extends string>(name: string, choices: readonly T[], value: unknown): T | undefined {
  if (value === undefined) return undefined;
  if (!(choices as readonly unknown[]).includes(value)) {
    throw new TypeError(`${name} must be one of ${choices.join(', ')}, got ${JSON.stringify(value)}`);
  }
  return value as T;
}

function rotationOf(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || (v as number) < 1 || (v as number) > 0xffffffff) {
    throw new TypeError(`ticketKeyRotation must be a whole number of seconds from 1, got ${JSON.stringify(v)}`);
  }
  return v as number;
}

/** The range initialWindow takes and its default, as the core defines them. */
export function initialWindowRange(): { min: number; max: number; default: number } {
  const l = addon().limits();
  return { min: l.initialWindowMin, max: l.initialWindowMax, default: l.defaultInitialWindow };
}

function initialWindowOf(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  const { min, max } = initialWindowRange();
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > max) {
    throw new TypeError(`initialWindow must be a whole number of packets from ${min} to ${max}, got ${JSON.stringify(v)}`);
  }
  return v as number;
}

function pacingOf(v: unknown): boolean | undefined {
  if (v === undefined || typeof v === 'boolean') return v;
  throw new TypeError(`pacing must be true or false, got ${JSON.stringify(v)}`);
}

/** A key option (statelessResetKey, retryTokenKey: 32 bytes; ticketKey: 48) as the addon takes it. */
export function keyOf(name: string, key: Buffer | string | undefined, size = 32): Buffer | undefined {
  if (key === undefined) return undefined;
  const hex = new RegExp(`^[0-9a-fA-F]{${2 * size}}$`);
  const bytes = typeof key === 'string' ? (hex.test(key) ? Buffer.from(key, 'hex') : undefined) : key;
  if (bytes === undefined || !Buffer.isBuffer(bytes) || bytes.length !== size) {
    throw new TypeError(`${name} must be ${size} bytes: a Buffer or ${2 * size} hex digits`);
  }
  return bytes;
}
