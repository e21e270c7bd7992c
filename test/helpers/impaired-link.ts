// A UDP relay on loopback that impairs the path between a client and the
// server by rule, per datagram: this machine's kernel has no netem
// (/work/shared/notes/test-environment.md), so delay, loss and a bottleneck
// come from here, in user space, as the QUIC interop runner's simulator
// does. Used by the tests and by the benchmark's W10.
import dgram from 'node:dgram';
import { AddressInfo } from 'node:net';

export interface LinkRules {
  /** One-way delay added to every datagram, both directions (ms). */
  delayMs?: number;
  /** Probability that a datagram is dropped, each direction (0..1). */
  loss?: number;
  /**
   * A bottleneck on the server-to-client direction: datagrams leave at this
   * rate (megabits per second) from a drop-tail queue of `queueBytes`.
   */
  rateMbps?: number;
  /** The bottleneck's queue (default: one round trip's worth at the rate, at least 64 KiB). */
  queueBytes?: number;
  /** Probability that one byte of a datagram is changed (anywhere in it), each direction (0..1). */
  corrupt?: number;
  /** Probability that a datagram is held back and sent after the next one in its direction (at most 20 ms later), each direction. */
  reorder?: number;
  /** Nothing passes either way for `forMs` once the server has sent `afterBytes` (a link that goes dark mid-transfer). */
  blackhole?: { afterBytes: number; forMs: number };
  /**
   * A NAT rebinding: once the server has sent `afterBytes`, the relay's
   * server-side socket is replaced every `everyMs` (`times` times at most),
   * so the client appears from a new port, and with `address` from a new
   * 127.0.0.x address too; the old mapping is gone at once.
   */
  rebind?: { everyMs: number; afterBytes?: number; times?: number; address?: boolean };
  /** Client datagrams after the first are dropped for this long: the server hears nothing more (the amplification limit's case). */
  silenceClientAfterFirstMs?: number;
  /** Server datagrams reaching the relay this many ms after the client's first, [from, to), are dropped (a close lost on its way). */
  silenceServerBetweenMs?: [number, number];
}

export interface ImpairedLink {
  /** The port clients connect to instead of the server's. */
  readonly port: number;
  /**
   * Server-to-client datagrams: arrival time at the relay (ms, hrtime),
   * size, whether a long header opens it, and whether the relay passed it
   * on unaltered (not lost, blackholed or corrupted; a drop at the
   * bottleneck's full queue later is not reflected here).
   */
  readonly fromServer: RelayedDatagram[];
  /** Client-to-server datagrams: the same record the other way. */
  readonly fromClient: RelayedDatagram[];
  /** UDP payload bytes the relay passed on to the client (after every rule). */
  readonly delivered: { toClientBytes: number };
  /** Datagrams dropped by the loss rule, and by the bottleneck's full queue. */
  readonly dropped: { toServer: number; toClient: number; queueFull: number };
  /** What the other rules did: datagrams corrupted, reordered and lost in the blackhole; rebindings made. */
  readonly impaired: { corrupted: number; reordered: number; blackholed: number; rebinds: number; silenced: number };
  /**
   * The server's anti-amplification limit seen from the wire (RFC 9000
   * section 8.1): UDP payload bytes the server received and sent before any
   * client Handshake packet reached it, and the largest excess of sent over
   * three times received at any moment in that span (0 or less: within it).
   */
  readonly amplification: { received: number; sent: number; worstExcess: number };
  /**
   * The relay's own fidelity: how much later than its rule said a delayed
   * datagram left (ms; timers fire at a millisecond or later, and later
   * still when this process waits for a core), over every delayed datagram.
   */
  lateness(): { count: number; meanMs: number; p99Ms: number; maxMs: number };
  /**
   * The longest stretch, up to now, in which no server datagram reached the
   * client intact: its length (ms), the server datagrams the relay lost or
   * corrupted in it, and the client datagrams that reached the server
   * intact in it and were followed by no server datagram within a second
   * (the server went quiet on a client it heard, rather than the link
   * swallowing its answers).
   */
  longestSilenceToClient(): { ms: number; destroyed: number; unanswered: number };
  close(): void;
}

export interface RelayedDatagram {
  at: number;
  size: number;
  long: boolean;
  intact: boolean;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** A datagram's record as it arrives at the relay; `intact` is set once a rule has passed it on. */
const arrived = (msg: Buffer, at: number): RelayedDatagram => ({ at, size: msg.length, long: (msg[0] & 0x80) !== 0, intact: false });

/** Relays one client to the server at `serverPort` on 127.0.0.1 under `rules`. */
export async function impairedLink(serverPort: number, rules: LinkRules): Promise<ImpairedLink> {
  const front = dgram.createSocket('udp4');
  const delay = rules.delayMs ?? 0;
  const loss = rules.loss ?? 0;
  const fromServer: RelayedDatagram[] = [];
  const fromClient: RelayedDatagram[] = [];
  const dropped = { toServer: 0, toClient: 0, queueFull: 0 };
  const impaired = { corrupted: 0, reordered: 0, blackholed: 0, rebinds: 0, silenced: 0 };
  const amplification = { received: 0, sent: 0, worstExcess: -Infinity };
  let validated = false;
  let serverBytes = 0;
  let blackholeUntil = 0;
  let firstClientAt = 0;
  let client: { address: string; port: number } | undefined;
  let closed = false;
  // Lateness in 0.1 ms steps up to 100 ms, the last bucket holding the rest.
  const late = new Uint32Array(1001);
  let lateSum = 0;
  let lateMax = 0;
  // Every send goes through here, so nothing reaches a socket after close():
  // a reordered datagram's timer or the bottleneck's can fire after it.
  const later = (send: () => void) => {
    if (closed) return;
    if (delay > 0) {
      const due = nowMs() + delay;
      setTimeout(() => {
        if (closed) return;
        const by = Math.max(0, nowMs() - due);
        late[Math.min(1000, Math.floor(by * 10))]++;
        lateSum += by;
        lateMax = Math.max(lateMax, by);
        send();
      }, delay);
    } else send();
  };
  const corrupt = (msg: Buffer, record: RelayedDatagram) => {
    if (!rules.corrupt || Math.random() >= rules.corrupt) return msg;
    impaired.corrupted++;
    record.intact = false;
    const i = Math.floor(Math.random() * msg.length);
    msg[i] ^= 1 + Math.floor(Math.random() * 255);
    return msg;
  };
  const dark = () => {
    if (nowMs() >= blackholeUntil) return false;
    impaired.blackholed++;
    return true;
  };
  const delivered = { toClientBytes: 0 };
  const toClient = reorderer(rules.reorder, impaired, (msg: Buffer) => {
    const to = client;
    if (!to) return;
    delivered.toClientBytes += msg.length;
    later(() => front.send(msg, to.port, to.address));
  });
  const toServer = reorderer(rules.reorder, impaired, (msg: Buffer) => later(() => back.send(msg, serverPort, '127.0.0.1')));
  const bottleneck = rules.rateMbps ? new Bottleneck(rules.rateMbps, rules.queueBytes ?? Math.max(64 * 1024, (rules.rateMbps * 125 * 2 * delay) | 0), toClient, dropped) : undefined;

  front.on('message', (msg, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    const now = nowMs();
    const record = arrived(msg, now);
    fromClient.push(record);
    if (firstClientAt === 0) firstClientAt = now;
    else if (rules.silenceClientAfterFirstMs && now - firstClientAt < rules.silenceClientAfterFirstMs) {
      impaired.silenced++;
      return;
    }
    if (dark()) return;
    if (Math.random() < loss) {
      dropped.toServer++;
      return;
    }
    if (!validated) {
      if (hasHandshakePacket(msg)) validated = true;
      else amplification.received += msg.length;
    }
    record.intact = true;
    toServer(corrupt(msg, record));
  });
  const onServerDatagram = (msg: Buffer) => {
    const record = arrived(msg, nowMs());
    fromServer.push(record);
    serverBytes += msg.length;
    if (!validated) {
      amplification.sent += msg.length;
      amplification.worstExcess = Math.max(amplification.worstExcess, amplification.sent - 3 * amplification.received);
    }
    if (rules.blackhole && blackholeUntil === 0 && serverBytes >= rules.blackhole.afterBytes) blackholeUntil = nowMs() + rules.blackhole.forMs;
    if (rules.rebind && !rebindTimer && serverBytes >= (rules.rebind.afterBytes ?? 0)) startRebinding(rules.rebind);
    if (dark()) return;
    const quiet = rules.silenceServerBetweenMs;
    if (quiet && firstClientAt > 0 && record.at - firstClientAt >= quiet[0] && record.at - firstClientAt < quiet[1]) {
      impaired.silenced++;
      return;
    }
    if (Math.random() < loss) {
      dropped.toClient++;
      return;
    }
    record.intact = true;
    if (bottleneck) bottleneck.offer(corrupt(msg, record));
    else toClient(corrupt(msg, record));
  };
  const bindBack = async (address: string) => {
    const sock = dgram.createSocket('udp4');
    sock.on('message', onServerDatagram);
    await new Promise<void>((r) => sock.bind(0, address, r));
    return sock;
  };
  let back = await bindBack('127.0.0.1');
  let rebindTimer: NodeJS.Timeout | undefined;
  const startRebinding = (r: NonNullable<LinkRules['rebind']>) => {
    rebindTimer = setInterval(() => {
      if (closed || impaired.rebinds >= (r.times ?? Infinity)) return;
      impaired.rebinds++;
      const old = back;
      void bindBack(r.address ? `127.0.0.${2 + (impaired.rebinds % 250)}` : '127.0.0.1').then((sock) => {
        if (closed) return sock.close();
        back = sock;
        old.close();
      });
    }, r.everyMs);
  };
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  return {
    port: (front.address() as AddressInfo).port,
    fromServer,
    fromClient,
    delivered,
    dropped,
    impaired,
    amplification,
    lateness: () => {
      let count = 0;
      for (const n of late) count += n;
      let seen = 0;
      let p99 = 0;
      for (let i = 0; i < late.length; i++) {
        seen += late[i];
        if (seen >= 0.99 * count) {
          p99 = i / 10;
          break;
        }
      }
      return { count, meanMs: count ? lateSum / count : 0, p99Ms: p99, maxMs: lateMax };
    },
    longestSilenceToClient: () => {
      let best = { from: firstClientAt || nowMs(), to: 0 };
      let from = best.from;
      const end = nowMs();
      for (const d of [...fromServer.filter((x) => x.intact).map((x) => x.at), end]) {
        if (d - from > best.to - best.from) best = { from, to: d };
        from = d;
      }
      const inside = (x: RelayedDatagram) => x.at > best.from && x.at < best.to;
      const destroyed = fromServer.filter((x) => inside(x) && !x.intact).length;
      const answered = (x: RelayedDatagram) => fromServer.some((y) => y.at >= x.at && y.at <= x.at + 1000);
      const unanswered = fromClient.filter((x) => inside(x) && x.intact && !answered(x)).length;
      return { ms: best.to - best.from, destroyed, unanswered };
    },
    close: () => {
      closed = true;
      if (rebindTimer) clearInterval(rebindTimer);
      bottleneck?.stop();
      front.close();
      back.close();
    },
  };
}

/** Sends through `send`, holding a datagram now and then (probability `p`) until the next one has gone. */
function reorderer(p: number | undefined, impaired: { reordered: number }, send: (msg: Buffer) => void): (msg: Buffer) => void {
  if (!p) return send;
  let held: Buffer | undefined;
  let timer: NodeJS.Timeout | undefined;
  return (msg) => {
    if (held) {
      const h = held;
      held = undefined;
      clearTimeout(timer);
      send(msg);
      send(h);
      return;
    }
    if (Math.random() < p) {
      impaired.reordered++;
      held = msg;
      timer = setTimeout(() => {
        if (held) send(held);
        held = undefined;
      }, 20);
      return;
    }
    send(msg);
  };
}

/** A QUIC variable-length integer at `o`: [value, its length], or undefined past the end. */
function varint(b: Buffer, o: number): [number, number] | undefined {
  if (o >= b.length) return undefined;
  const n = 1 << (b[o] >> 6);
  if (o + n > b.length) return undefined;
  let v = b[o] & 0x3f;
  for (let i = 1; i < n; i++) v = v * 256 + b[o + i];
  return [v, n];
}

/** Whether a datagram carries a QUIC v1 Handshake packet (walking its coalesced long-header packets, RFC 9000 section 12.2). */
export function hasHandshakePacket(b: Buffer): boolean {
  let o = 0;
  while (o + 6 < b.length && b[o] & 0x80) {
    const type = (b[o] & 0x30) >> 4;
    if (b.readUInt32BE(o + 1) !== 1) return false;
    if (type === 2) return true;
    if (type === 3) return false;
    let p = o + 5;
    p += 1 + b[p];
    if (p >= b.length) return false;
    p += 1 + b[p];
    if (type === 0) {
      const token = varint(b, p);
      if (!token) return false;
      p += token[1] + token[0];
    }
    const length = varint(b, p);
    if (!length) return false;
    o = p + length[1] + length[0];
  }
  return false;
}

/**
 * A link of fixed rate with a drop-tail queue: datagrams leave when the
 * bytes the rate earned cover them. Timers run at a millisecond or a little
 * more, so departures come in groups of about a millisecond's worth (at
 * 100 Mbit/s, 12.5 KB), as a link with a 1 ms scheduling quantum would.
 */
class Bottleneck {
  readonly #bytesPerMs: number;
  readonly #queue: Buffer[] = [];
  #queued = 0;
  #credit = 0;
  #last = nowMs();
  #timer: NodeJS.Timeout | undefined;

  constructor(
    rateMbps: number,
    private readonly limit: number,
    private readonly deliver: (msg: Buffer) => void,
    private readonly dropped: { queueFull: number },
  ) {
    this.#bytesPerMs = rateMbps * 125;
  }

  offer(msg: Buffer): void {
    if (this.#queued + msg.length > this.limit) {
      this.dropped.queueFull++;
      return;
    }
    this.#queue.push(msg);
    this.#queued += msg.length;
    this.#drain();
  }

  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
    this.#queue.length = 0;
  }

  #drain(): void {
    const now = nowMs();
    // While the queue holds datagrams the link is busy the whole time, so
    // everything the rate earned since the last drain is spent, however
    // late the timer fired; an idle link banks at most one datagram.
    this.#credit += (now - this.#last) * this.#bytesPerMs;
    this.#last = now;
    while (this.#queue.length > 0 && this.#credit >= this.#queue[0].length) {
      const msg = this.#queue.shift()!;
      this.#queued -= msg.length;
      this.#credit -= msg.length;
      this.deliver(msg);
    }
    if (this.#queue.length === 0) this.#credit = Math.min(this.#credit, 1500);
    if (this.#queue.length > 0 && !this.#timer) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        this.#drain();
      }, 1);
    }
  }
}
