// A Readable whose stream machinery is built the first time anything uses
// it, rather than in the constructor.
//
// Why: most requests a server answers (a GET, a HEAD) have no body and a
// handler that never reads one. An eager Readable still costs every such
// request its state object, the 'readable' tick of push(null), and, once
// the response is done, the dump that node:http does (resume, 'end',
// autoDestroy, 'close': three more ticks). Measured alone, that life cycle
// is 1.2-2.0 us of CPU per object against 0.13-0.29 for a plain object
// (Node 20, one core, bench/tools/readable-cost.mjs); in W1 it was most of
// what the node:http2-shaped API cost over the demo exchange
// (docs/design.md, "The JavaScript side's cost per request").
//
// How: every Readable method reaches its state through `this._readableState`
// (and EventEmitter's through `this._events`, which it creates on demand).
// The prototype here answers that property with an accessor: the first read
// runs Readable's own constructor on the object (`Readable.call`, as
// node:http's IncomingMessage does), whose assignment lands in the setter,
// then lets the subclass replay what happened while the stream slept
// (`_wake`): the body it already holds, its end, a dump it owes. From then
// on it is a plain Readable. `instanceof
// Readable`, `pipe`, `for await`, `stream.finished` and every listener work
// unchanged; adding a listener (`on`, `once`, `prependListener`) wakes it
// first.
import { Readable } from 'node:stream';

/** A constructor that makes the object and nothing else: Readable's prototype, none of its state. */
const Dormant = function DormantReadable(this: object) {} as unknown as typeof Readable;
Object.setPrototypeOf(Dormant.prototype, Readable.prototype);
Object.setPrototypeOf(Dormant, Readable);

export abstract class DormantReadable extends Dormant {
  /** Readable's state once built; `_readableState` reads it (the accessor below). */
  #state: unknown;

  /**
   * Called once, when the stream's machinery has just been built: push what
   * arrived meanwhile (and its end), act on what happened meanwhile. The
   * stream is an ordinary Readable when this runs.
   */
  protected abstract _wake(): void;

  /** Readable's machinery exists (true from `_wake` on). */
  protected get _awake(): boolean {
    return this.#state !== undefined;
  }

  /**
   * EventEmitter's prependListener (and prependOnceListener, which calls
   * it) adds a listener without Readable's `on`: it wakes the stream here,
   * so a listener added either way sees the same 'data', 'end' and 'close'.
   */
  override prependListener(event: string | symbol, listener: (...args: any[]) => void): this {
    void (this as unknown as { _readableState: unknown })._readableState;
    return super.prependListener(event, listener);
  }

  static {
    // An accessor for good rather than an own data property defined at the
    // wake: Object.defineProperty per request cost more (about 2,000
    // instructions under callgrind, a descriptor object, a map migration)
    // than the getter's calls.
    Object.defineProperty(DormantReadable.prototype, '_readableState', {
      configurable: true,
      get(this: DormantReadable) {
        if (this.#state !== undefined) return this.#state;
        // Readable's constructor assigns _readableState: the setter keeps it.
        (Readable as unknown as (this: Readable) => void).call(this);
        this._wake();
        return this.#state;
      },
      set(this: DormantReadable, value: unknown) {
        this.#state = value;
      },
    });
  }
}
