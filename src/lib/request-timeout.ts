// The request timeout: a handler that never answers must not hold a stream
// (and the client) forever. After requestTimeoutMs the server answers for it.
//
// 503 rather than a stream reset with H3_REQUEST_CANCELLED: the client gets a
// definite HTTP answer it can act on (RFC 9110 section 15.6.4: the server is
// temporarily unable to handle the request; retrying later may work), every
// HTTP client surfaces a status while many report a reset only as a generic
// network error, and the response path already frees the stream (the native
// core stops reading the request with STOP_SENDING H3_NO_ERROR and forgets the
// stream once the answer is acknowledged).

/** Default requestTimeoutMs. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
export const REQUEST_TIMEOUT_STATUS = 503;

/** An entry of RequestDeadlines; the server's exchange carries these links. */
export interface Deadlined {
  deadline?: number;
  prevDeadline?: Deadlined;
  nextDeadline?: Deadlined;
}

/**
 * Every open request's deadline, with one timer for all of them. One
 * timeout applies to every request, so arrival order is deadline order: a
 * doubly linked list kept in that order adds and removes in O(1), and only
 * its head needs a timer. (A timer per request cost a setTimeout, an unref
 * and a clearTimeout on every request.) It holds only open requests: each
 * leaves when answered, aborted or timed out.
 */
export class RequestDeadlines<T extends Deadlined> {
  private head: T | undefined;
  private tail: T | undefined;
  private timer: NodeJS.Timeout | undefined;
  readonly limitMs: number;

  constructor(
    ms: number | undefined,
    private readonly onTimeout: (entry: T) => void,
  ) {
    const limit = ms ?? DEFAULT_REQUEST_TIMEOUT_MS;
    this.limitMs = Number.isFinite(limit) && limit > 0 ? limit : 0;
  }

  add(entry: T): void {
    if (this.limitMs === 0 || entry.deadline !== undefined) return;
    entry.deadline = Date.now() + this.limitMs;
    entry.prevDeadline = this.tail;
    entry.nextDeadline = undefined;
    if (this.tail) this.tail.nextDeadline = entry;
    else this.head = entry;
    this.tail = entry;
    if (this.timer === undefined) this.arm(entry.deadline);
  }

  remove(entry: T): void {
    if (entry.deadline === undefined) return;
    const prev = entry.prevDeadline as T | undefined;
    const next = entry.nextDeadline as T | undefined;
    if (prev) prev.nextDeadline = next;
    else this.head = next;
    if (next) next.prevDeadline = prev;
    else this.tail = prev;
    entry.deadline = entry.prevDeadline = entry.nextDeadline = undefined;
    // The timer stays armed for the old head: when it fires it finds nothing
    // due and re-arms for the new head (one early wake-up, no churn per request).
    if (!this.head) this.disarm();
  }

  /** Forgets every entry and stops the timer (server closed). */
  clear(): void {
    for (let e = this.head; e; ) {
      const next = e.nextDeadline as T | undefined;
      e.deadline = e.prevDeadline = e.nextDeadline = undefined;
      e = next;
    }
    this.head = this.tail = undefined;
    this.disarm();
  }

  private arm(at: number): void {
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - Date.now()));
    // Pending requests must not keep the process alive on their own.
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private fire(): void {
    this.timer = undefined;
    const now = Date.now();
    while (this.head && this.head.deadline! <= now) {
      const due = this.head;
      this.remove(due);
      this.onTimeout(due);
    }
    if (this.head && this.timer === undefined) this.arm(this.head.deadline!);
  }
}
