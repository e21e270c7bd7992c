// A request's idle timeout (req.setTimeout, res.setTimeout, server.setTimeout):
// fires once when neither body bytes arrived nor response bytes were
// written for `ms`. Activity only records a time; the timer checks it when
// it fires and re-arms for the rest, so a busy stream costs one Date.now()
// per chunk instead of a timer refresh.
export class IdleTimer {
  #ms = 0;
  #timer: NodeJS.Timeout | undefined;
  #lastActivity = 0;
  readonly #onIdle: () => void;

  constructor(onIdle: () => void) {
    this.#onIdle = onIdle;
  }

  get ms(): number {
    return this.#ms;
  }

  /** Arms the timer for `ms` of idleness from now; 0 (or less) turns it off. */
  set(ms: number): void {
    this.stop();
    this.#ms = Number.isFinite(ms) && ms > 0 ? ms : 0;
    if (this.#ms === 0) return;
    this.#lastActivity = Date.now();
    this.#arm(this.#ms);
  }

  touch(): void {
    if (this.#timer !== undefined) this.#lastActivity = Date.now();
  }

  stop(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delay: number): void {
    this.#timer = setTimeout(() => this.#fire(), delay);
    // An open request must not keep the process alive on its own.
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    const idleFor = Date.now() - this.#lastActivity;
    if (idleFor < this.#ms) {
      this.#arm(this.#ms - idleFor);
      return;
    }
    this.#onIdle();
  }
}
