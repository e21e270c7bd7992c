// Work responses defer to the next tick (a header section writeHead fixed
// with nothing written after it; 'finish' and 'close' after end), gathered
// so that a turn answering twenty requests schedules one process.nextTick
// rather than a closure and a tick for each response. Items run in the
// order they were added, as their own ticks would have.

export class TickQueue<T> {
  #items: T[] = [];
  #scheduled = false;
  readonly #run: (item: T) => void;

  constructor(run: (item: T) => void) {
    this.#run = run;
  }

  add(item: T): void {
    this.#items.push(item);
    if (!this.#scheduled) {
      this.#scheduled = true;
      process.nextTick(this.#drain);
    }
  }

  readonly #drain = (): void => {
    this.#scheduled = false;
    const items = this.#items;
    this.#items = [];
    for (let i = 0; i < items.length; i++) {
      try {
        this.#run(items[i]);
      } catch (e) {
        // A listener threw (it surfaces as the uncaught exception its own
        // tick would have raised): the items after it still run, next tick,
        // ahead of any added meanwhile.
        this.#items = items.slice(i + 1).concat(this.#items);
        if (this.#items.length > 0 && !this.#scheduled) {
          this.#scheduled = true;
          process.nextTick(this.#drain);
        }
        throw e;
      }
    }
  };
}
