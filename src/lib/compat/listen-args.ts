// server.listen()'s argument forms, as net.Server accepts them:
// listen(port, host, backlog, cb), listen(port, cb), listen(cb),
// listen({ port, host }, cb) (Fastify calls this one). The backlog and the
// other net options have no meaning for a UDP socket and are ignored.

export interface ListenOptions {
  port?: number | string;
  host?: string;
  backlog?: number;
  [other: string]: unknown;
}

export interface ListenArgs {
  port: number;
  host: string | undefined;
  callback: (() => void) | undefined;
}

export function normalizeListenArgs(args: readonly unknown[]): ListenArgs {
  const last = args[args.length - 1];
  const callback = typeof last === 'function' ? (last as () => void) : undefined;
  const rest = callback ? args.slice(0, -1) : args;
  let port: unknown = 0;
  let host: unknown;
  if (rest.length > 0 && rest[0] !== null && typeof rest[0] === 'object') {
    const o = rest[0] as ListenOptions;
    if (o.path !== undefined) throw new TypeError('an HTTP/3 server listens on a UDP port, not a path');
    port = o.port ?? 0;
    host = o.host;
  } else {
    if (rest.length > 0 && rest[0] !== undefined && rest[0] !== null) port = rest[0];
    if (typeof rest[1] === 'string') host = rest[1];
  }
  return { port: checkPort(port), host: typeof host === 'string' && host !== '' ? host : undefined, callback };
}

function checkPort(port: unknown): number {
  const n = typeof port === 'string' && /^\d+$/.test(port.trim()) ? Number(port) : port;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 65535) {
    const e = new RangeError(`options.port should be >= 0 and < 65536. Received ${String(port)}.`);
    throw Object.assign(e, { code: 'ERR_SOCKET_BAD_PORT' });
  }
  return n;
}
