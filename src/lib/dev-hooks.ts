// Hooks for the test suite and the benchmark, handed to a server explicitly
// with its options rather than read from the environment, so no variable
// set in a user's shell can make a server panic or answer without its
// handler. Not exported from the package's main entry; tests and bench
// scripts import this module by path (src/lib/dev-hooks.ts,
// dist/lib/dev-hooks.js).

import type { CoreOptions, StreamServer, StreamServerEvents } from './stream-server';

/** What createSecureServer needs of a StreamServer; tests hand in a fake one. */
export type StreamServerFactory = (
  options: CoreOptions,
  events: StreamServerEvents,
) => Pick<StreamServer, 'listen' | 'address' | 'close'> & Partial<Pick<StreamServer, 'setIdentities'>>;

export interface DevHooks {
  /** Fault injection: a request for this path panics inside the native core. */
  panicOnPath?: string;
  /** One datagram per send, no GSO: a capture on lo then holds each datagram as sent, which tshark needs. */
  noGso?: boolean;
  /**
   * Benchmark only (bench/README.md): Rust answers Profile A or C itself, the
   * ceiling for the boundary's cost; or W8's upload and download of this file
   * (`w8:<file>`), the floor under createSecureServer's W8 row.
   */
  benchNativeHandler?: 'a' | 'c' | `w8:${string}`;
  /** Load this addon file instead of dist/native's (the benchmark builds a variant). */
  addonPath?: string;
  /** createSecureServer: make this instead of the native StreamServer (unit tests drive fake streams through it). */
  streamServer?: StreamServerFactory;
}

// Module-private: only withDevHooks can attach hooks and only devHooksOf read them.
const DEV_HOOKS = Symbol('h3-node.devHooks');

/** A copy of `options` carrying `hooks`; pass it to createServer. Spreading the copy keeps the hooks. */
export function withDevHooks<T extends object>(options: T, hooks: DevHooks): T {
  return { ...options, [DEV_HOOKS]: hooks };
}

/** The hooks attached to `options`, if any. */
export function devHooksOf(options: object): DevHooks | undefined {
  return (options as { [DEV_HOOKS]?: DevHooks })[DEV_HOOKS];
}
