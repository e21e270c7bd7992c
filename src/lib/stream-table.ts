// One connection's open request streams by stream ID. Not a Map on
// purpose: a Map whose entries come and go for every request rehashes into
// a new table every few dozen requests, and V8 keeps each replaced table
// (with the streams it held) linked to its successor for the sake of live
// iterators. Once one of those tables sits in the old generation, every
// scavenge treats what it reaches as alive, so each request's objects were
// copied and promoted instead of dying young: in a replay of W3's batches
// 15-69 % of the young generation survived each scavenge and JavaScript
// spent 5-15 us per request, against 0.6 % and 2-3 us with this table
// (docs/design.md, "A V8 garbage-collection mode"). A dictionary object's
// rehash leaves nothing linked behind.
import type { NativeRequestStream } from './native-stream';

export class StreamTable {
  #slots: Record<number, NativeRequestStream> = Object.create(null);
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(id: number): NativeRequestStream | undefined {
    return this.#slots[id];
  }

  set(id: number, stream: NativeRequestStream): void {
    if (this.#slots[id] === undefined) this.#size++;
    this.#slots[id] = stream;
  }

  delete(id: number): void {
    if (this.#slots[id] === undefined) return;
    delete this.#slots[id];
    this.#size--;
  }

  values(): NativeRequestStream[] {
    return Object.values(this.#slots);
  }
}
