// One connection's open request streams by stream ID. Not a Map on
// purpose: a Map whose entries come and go for every request rehashes into
// a new table every few dozen requests, and V8 keeps each replaced table
// (with the streams it held) linked to its successor for the sake of live
// iterators. Once one of those tables sits in the old generation, every
// scavenge treats what it reaches as alive, so each request's objects were
// copied and promoted instead of dying young: in a replay of W3's batches
// 15-69 % of the young generation survived each scavenge and JavaScript
// spent 5-15 us per request, against 0.6 % and 2-3 us without the Map
// (docs/design.md, "A V8 garbage-collection mode").
//
// A ring of slots indexed by the stream's sequence number (client-initiated
// bidirectional streams are 0, 4, 8...; the ID is checked on every lookup)
// instead: a lookup is one array read, nothing is rehashed, and a cleared
// slot holds nothing. The ring is larger than the number of requests a
// client may have open at once (`maxStreamsPerConnection`, 128 by default),
// so two live streams share a slot only when one stays open while hundreds
// of later ones come and go; the later one then goes to an overflow Map.
import type { NativeRequestStream } from './native-stream';

const SLOTS = 512;
const MASK = SLOTS - 1;

/** The slot of a stream ID: its sequence number, modulo the ring (exact for every ID below 2^53). */
const slotOf = (id: number): number => (id / 4) & MASK;

export class StreamTable {
  readonly #slots: Array<NativeRequestStream | undefined> = new Array(SLOTS).fill(undefined);
  #overflow: Map<number, NativeRequestStream> | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get(id: number): NativeRequestStream | undefined {
    const s = this.#slots[slotOf(id)];
    if (s !== undefined && s.id === id) return s;
    return this.#overflow?.get(id);
  }

  set(id: number, stream: NativeRequestStream): void {
    const slot = slotOf(id);
    const s = this.#slots[slot];
    if (s !== undefined && s.id === id) {
      this.#slots[slot] = stream;
    } else if (this.#overflow?.has(id)) {
      this.#overflow.set(id, stream);
    } else if (s === undefined) {
      this.#slots[slot] = stream;
      this.#size++;
    } else {
      (this.#overflow ??= new Map()).set(id, stream);
      this.#size++;
    }
  }

  delete(id: number): void {
    const slot = slotOf(id);
    const s = this.#slots[slot];
    if (s !== undefined && s.id === id) {
      this.#slots[slot] = undefined;
      this.#size--;
    } else if (this.#overflow?.delete(id)) {
      this.#size--;
      if (this.#overflow.size === 0) this.#overflow = undefined;
    }
  }

  values(): NativeRequestStream[] {
    const out: NativeRequestStream[] = [];
    for (const s of this.#slots) if (s !== undefined) out.push(s);
    if (this.#overflow) out.push(...this.#overflow.values());
    return out;
  }
}
