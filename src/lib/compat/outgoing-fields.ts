// A response's header fields until they go on the wire: in the order they
// were first set, found by wire (lowercase) name. One flat array of
// (wire name, name as set, value) triples rather than an object keyed by
// name: a response has a handful of fields, and scanning a few strings
// costs less than making and filling a dictionary object per response.
import type { OutgoingValue } from './header-rules';

export class OutgoingFields {
  /** key, name, value, key, name, value, ... */
  #slots: (string | OutgoingValue)[] = [];

  #find(key: string): number {
    const s = this.#slots;
    for (let i = 0; i < s.length; i += 3) if (s[i] === key) return i;
    return -1;
  }

  get(key: string): OutgoingValue | undefined {
    const i = this.#find(key);
    return i < 0 ? undefined : (this.#slots[i + 2] as OutgoingValue);
  }

  has(key: string): boolean {
    return this.#find(key) >= 0;
  }

  /** Replaces the value; a field set before keeps its place, as an object's key does. */
  set(key: string, name: string, value: OutgoingValue): void {
    const i = this.#find(key);
    if (i < 0) this.#slots.push(key, name, value);
    else {
      this.#slots[i + 1] = name;
      this.#slots[i + 2] = value;
    }
  }

  /** Adds value(s) after those already there. */
  append(key: string, name: string, value: OutgoingValue): void {
    const i = this.#find(key);
    if (i < 0) {
      this.#slots.push(key, name, value);
      return;
    }
    const prev = this.#slots[i + 2] as OutgoingValue;
    this.#slots[i + 2] = (typeof prev === 'string' ? [prev] : prev).concat(value);
  }

  delete(key: string): void {
    const i = this.#find(key);
    if (i >= 0) this.#slots.splice(i, 3);
  }

  clear(): void {
    this.#slots = [];
  }

  /** Calls `fn` for each field in order. */
  forEach(fn: (key: string, value: OutgoingValue, name: string) => void): void {
    const s = this.#slots;
    for (let i = 0; i < s.length; i += 3) fn(s[i] as string, s[i + 2] as OutgoingValue, s[i + 1] as string);
  }

  /** The flat field lines (key, value, ...), one line per array element, each value through `wire`. */
  pushLines(out: string[], wire: (v: string) => string): void {
    const s = this.#slots;
    for (let i = 0; i < s.length; i += 3) {
      const key = s[i] as string;
      const v = s[i + 2] as OutgoingValue;
      if (typeof v === 'string') out.push(key, wire(v));
      else for (const x of v) out.push(key, wire(x));
    }
  }
}
