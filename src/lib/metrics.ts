// Opt-in Prometheus metrics (`--metrics-port`): a plain HTTP/1.1 endpoint,
// on localhost unless told otherwise, serving `/metrics` in the Prometheus
// text format from prom-client. Every value is read when Prometheus scrapes:
// native counters straight from the core, request statuses from the
// server's 'response' events plus the core's tally of its own answers, the
// WebTransport counters from the server's session events (the ones Profile
// B's `/stats` reports). With workers every figure is the whole server's:
// the native counters are shared by the workers, and statuses and
// WebTransport figures come from them rather than this thread's events. A registry per endpoint, so several servers in one
// process do not share series; Prometheus adds the `instance` label that
// tells several processes apart.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Http3Server } from './server';
import { WebTransportCounters } from './webtransport-counters';

export interface MetricsOptions {
  /** TCP port of the endpoint; 0 picks a free one. */
  port: number;
  /** Address to bind; 127.0.0.1 by default, so metrics are not exposed to the network unless asked. */
  host?: string;
  /** Also export the WebTransport counters (sessions, streams, datagrams). */
  webtransport?: boolean;
}

export interface MetricsEndpoint {
  readonly registry: Registry;
  readonly port: number;
  readonly url: string;
  close(): Promise<void>;
}

/** A counter whose value is read from elsewhere at scrape time. */
function observedCounter(registry: Registry, name: string, help: string, read: () => number): void {
  new Counter({
    name,
    help,
    registers: [registry],
    collect() {
      this.reset();
      this.inc(read());
    },
  });
}

function observedGauge(registry: Registry, name: string, help: string, read: () => number): void {
  new Gauge({
    name,
    help,
    registers: [registry],
    collect() {
      this.set(read());
    },
  });
}

/** Builds the registry for one server. Call before `server.listen()` so nothing is missed. */
export function createMetricsRegistry(server: Http3Server, webtransport = false): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const c = () => server.counters();
  observedGauge(registry, 'h3_connections_open', 'QUIC connections open now', () => c().connectionsOpen);
  observedCounter(registry, 'h3_connections_total', 'QUIC connections accepted', () => c().connectionsAccepted);
  observedCounter(
    registry,
    'h3_handshake_failures_total',
    'connections closed before their handshake completed',
    () => c().handshakeFailures,
  );
  observedCounter(registry, 'h3_bytes_received_total', 'UDP payload bytes received', () => c().udpBytesReceived);
  observedCounter(registry, 'h3_bytes_sent_total', 'UDP payload bytes sent', () => c().udpBytesSent);
  observedCounter(registry, 'h3_datagrams_received_total', 'UDP datagrams received', () => c().udpDatagramsReceived);
  observedCounter(registry, 'h3_datagrams_sent_total', 'UDP datagrams sent', () => c().udpDatagramsSent);
  // Connection migration (RFC 9000 section 9) and per-packet source
  // addresses: a client that moved, the new paths checked, and the packets
  // a wildcard-bound socket sent from the address the client reached.
  observedCounter(registry, 'h3_path_migrations_total', 'connections whose client moved to a new address or port', () => c().pathMigrations);
  observedCounter(registry, 'h3_paths_validated_total', 'new client paths validated (PATH_CHALLENGE answered)', () => c().pathsValidated);
  observedCounter(
    registry,
    'h3_paths_validation_failed_total',
    'new client paths that failed validation',
    () => c().pathsValidationFailed,
  );
  observedCounter(
    registry,
    'h3_datagrams_sent_with_source_total',
    'UDP datagrams sent with an explicit source address (a wildcard-bound socket answering from the address the client reached)',
    () => c().udpSentWithSource,
  );
  observedCounter(registry, 'h3_send_failures_total', 'connections dropped because quiche could build no packet for them, not even the CONNECTION_CLOSE', () => c().sendFailures);
  // Two sources, summed per status at scrape time: the 'response' events of
  // answers from JavaScript, and the native core's own tally of the answers
  // it writes without JavaScript (413, 429, 431, 501, the 200 that opens a
  // WebTransport session). The native tally is kept at its highest seen
  // value so the counter does not drop once the server has closed.
  const fromHandlers = new Map<string, number>();
  const fromNative = new Map<string, number>();
  server.on('response', (_req, status: number) => {
    const k = String(status);
    fromHandlers.set(k, (fromHandlers.get(k) ?? 0) + 1);
  });
  new Counter({
    name: 'h3_requests_total',
    help: 'requests answered, by response status (handlers and the native core, WebTransport session 200s included)',
    labelNames: ['status'],
    registers: [registry],
    collect() {
      const n = c();
      const native: [string, number][] = [
        ['200', n.nativeResponses200],
        ['413', n.nativeResponses413],
        ['429', n.nativeResponses429],
        ['431', n.nativeResponses431],
        ['501', n.nativeResponses501],
      ];
      for (const [k, count] of native) {
        if (count > 0) fromNative.set(k, Math.max(fromNative.get(k) ?? 0, count));
      }
      // With workers, the other workers' handlers answer too: the core's
      // tally of every worker's responses stands in for this thread's events.
      const handlers = server.workerStats()
        ? new Map([...server.responseStatuses()].map(([status, count]) => [String(status), count]))
        : fromHandlers;
      this.reset();
      for (const k of new Set([...handlers.keys(), ...fromNative.keys()])) {
        this.inc({ status: k }, (handlers.get(k) ?? 0) + (fromNative.get(k) ?? 0));
      }
    },
  });

  if (webtransport) {
    const wt = new WebTransportCounters().attach(server);
    observedGauge(registry, 'h3_webtransport_sessions_open', 'WebTransport sessions open now', () => wt.sessionsOpen);
    observedGauge(registry, 'h3_webtransport_sessions_cap', 'WebTransport sessions allowed at once', () => wt.sessionsCap);
    observedGauge(registry, 'h3_webtransport_peer_streams_open', 'client WebTransport streams open now', () => wt.peerStreamsOpen);
    observedGauge(
      registry,
      'h3_webtransport_peer_streams_cap',
      'client WebTransport streams allowed at once',
      () => wt.peerStreamsCap,
    );
    observedCounter(registry, 'h3_webtransport_sessions_total', 'WebTransport sessions established', () => wt.sessionsTotal);
    observedCounter(registry, 'h3_webtransport_streams_total', 'client WebTransport streams offered', () => wt.streamsTotal);
    observedCounter(
      registry,
      'h3_webtransport_datagrams_total',
      'WebTransport datagrams received for open sessions',
      () => wt.datagramsTotal,
    );
  }
  return registry;
}

/** Serves `GET /metrics` over HTTP/1.1; anything else is 404. */
export function serveMetrics(registry: Registry, options: { port: number; host?: string }): Promise<MetricsEndpoint> {
  const host = options.host ?? '127.0.0.1';
  const httpServer = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; metrics are at /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(req.method === 'HEAD' ? undefined : text),
      (e) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${(e as Error).message}\n`),
    );
  });
  return new Promise((resolve, reject) => {
    httpServer.once('error', (e: NodeJS.ErrnoException) =>
      reject(new Error(e.code === 'EADDRINUSE' ? `metrics port ${options.port} on ${host} is already in use` : `cannot serve metrics: ${e.message}`)),
    );
    httpServer.listen(options.port, host, () => {
      const port = (httpServer.address() as AddressInfo).port;
      const shown = host.includes(':') ? `[${host}]` : host;
      resolve({
        registry,
        port,
        url: `http://${shown}:${port}/metrics`,
        close: () =>
          new Promise<void>((r) => {
            httpServer.close(() => r());
            httpServer.closeAllConnections();
          }),
      });
    });
  });
}

/** Both steps: a registry for `server` and its endpoint. */
export function startMetrics(server: Http3Server, options: MetricsOptions): Promise<MetricsEndpoint> {
  return serveMetrics(createMetricsRegistry(server, options.webtransport), options);
}
