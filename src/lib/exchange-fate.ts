// Whether the client went away before an exchange of the fetch adapter
// completed, with an AbortSignal made only when someone needs one (the
// real Request's `signal`). In Node 20 every AbortController costs a
// transferable EventTarget (`createAbortSignal`: 7.6 % of the adapter's
// JavaScript in a profile of W1's `/login`, and the listeners' add and
// remove another 2.5 %), and most exchanges never ask for the signal.

export class ExchangeFate {
  aborted = false;
  reason: unknown = undefined;
  #listeners: Array<() => void> | undefined;
  #controller: AbortController | undefined;

  /** The client went away (first call wins): listeners run, and the signal, if made, aborts. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const f of listeners) f();
  }

  /** Calls `f` once when the exchange is aborted (at once if it is); returns the unsubscribe. */
  onAbort(f: () => void): () => void {
    if (this.aborted) {
      f();
      return () => {};
    }
    (this.#listeners ??= []).push(f);
    return () => {
      const i = this.#listeners?.indexOf(f) ?? -1;
      if (i >= 0) this.#listeners!.splice(i, 1);
    };
  }

  /** An AbortSignal that follows this fate, made on the first call. */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }
}
