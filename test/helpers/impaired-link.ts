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
}

export interface ImpairedLink {
  /** The port clients connect to instead of the server's. */
  readonly port: number;
  /** Server-to-client datagrams: arrival time at the relay (ms, hrtime), size, and whether a long header opens it. */
  readonly fromServer: { at: number; size: number; long: boolean }[];
  /** Datagrams dropped by the loss rule, and by the bottleneck's full queue. */
  readonly dropped: { toServer: number; toClient: number; queueFull: number };
  close(): void;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/** Relays one client to the server at `serverPort` on 127.0.0.1 under `rules`. */
export async function impairedLink(serverPort: number, rules: LinkRules): Promise<ImpairedLink> {
  const front = dgram.createSocket('udp4');
  const back = dgram.createSocket('udp4');
  const delay = rules.delayMs ?? 0;
  const loss = rules.loss ?? 0;
  const fromServer: { at: number; size: number; long: boolean }[] = [];
  const dropped = { toServer: 0, toClient: 0, queueFull: 0 };
  let client: { address: string; port: number } | undefined;
  let closed = false;
  const later = (send: () => void) => {
    if (delay > 0) setTimeout(() => !closed && send(), delay);
    else send();
  };
  const toClient = (msg: Buffer) => {
    const to = client;
    if (to) later(() => front.send(msg, to.port, to.address));
  };
  const bottleneck = rules.rateMbps ? new Bottleneck(rules.rateMbps, rules.queueBytes ?? Math.max(64 * 1024, (rules.rateMbps * 125 * 2 * delay) | 0), toClient, dropped) : undefined;
  front.on('message', (msg, rinfo) => {
    client = { address: rinfo.address, port: rinfo.port };
    if (Math.random() < loss) dropped.toServer++;
    else later(() => back.send(msg, serverPort, '127.0.0.1'));
  });
  back.on('message', (msg) => {
    fromServer.push({ at: nowMs(), size: msg.length, long: (msg[0] & 0x80) !== 0 });
    if (Math.random() < loss) dropped.toClient++;
    else if (bottleneck) bottleneck.offer(msg);
    else toClient(msg);
  });
  await new Promise<void>((r) => front.bind(0, '127.0.0.1', r));
  await new Promise<void>((r) => back.bind(0, '127.0.0.1', r));
  return {
    port: (front.address() as AddressInfo).port,
    fromServer,
    dropped,
    close: () => {
      closed = true;
      bottleneck?.stop();
      front.close();
      back.close();
    },
  };
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
