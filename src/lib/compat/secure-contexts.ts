// An SNICallback answers with a tls.SecureContext, and node:tls keeps the
// key material inside it where JavaScript cannot read it back. To present
// the same identity over QUIC, h3-node remembers the options each
// SecureContext was made from: tls.createSecureContext is wrapped once,
// when this module loads, by a function that calls Node's and records its
// options in a WeakMap keyed by the context (nothing else changes; the map
// holds no context alive). ESM named imports of node:tls see the wrapper
// too (syncBuiltinESMExports). A context made before h3-node was loaded is
// not in the map, and answering with it fails that handshake with a
// message saying so.
import { syncBuiltinESMExports } from 'node:module';
import type { SecureContext, SecureContextOptions } from 'node:tls';
// The default import is the module object itself (esModuleInterop's
// default of a CommonJS module), whose property is what is replaced; the
// declarations name only the types, so consumers without esModuleInterop
// type-check them.
import tls from 'node:tls';

type Recorder = WeakMap<SecureContext, SecureContextOptions>;

// One map per process, whichever copies of h3-node are loaded.
const KEY = Symbol.for('h3-node.secureContextOptions');
const holder = tls as unknown as { [KEY]?: Recorder };

function install(): Recorder {
  const existing = holder[KEY];
  if (existing) return existing;
  const made: Recorder = new WeakMap();
  const original = tls.createSecureContext;
  const createSecureContext = function createSecureContext(options?: SecureContextOptions): SecureContext {
    const context = original(options);
    if (options) made.set(context, options);
    return context;
  };
  (tls as { createSecureContext: typeof tls.createSecureContext }).createSecureContext = createSecureContext;
  Object.defineProperty(tls, KEY, { value: made });
  syncBuiltinESMExports();
  return made;
}

const recorded = install();

/** The options `context` was made from by tls.createSecureContext, if it was made after h3-node loaded. */
export function secureContextOptions(context: SecureContext): SecureContextOptions | undefined {
  return recorded.get(context);
}

/** Whether `value` is a tls.SecureContext (what tls.createSecureContext returns). */
export function isSecureContext(value: unknown): value is SecureContext {
  return typeof value === 'object' && value !== null && 'context' in value && value.constructor?.name === 'SecureContext';
}
