// Public API of h3-node: the library. The demo (profiles, CLI, demo page,
// demo credentials) is the `h3-node/demo` entry, src/demo/index.ts.
export { createServer, Http3Server } from './lib/server';
export type {
  AddressInfo,
  BodyHandler,
  ConnectionCloseInfo,
  ConnectionInfo,
  RequestHandler,
  ServerOptions,
  WebTransportSessionInfo,
  WebTransportStreamInfo,
} from './lib/server';
export { H3Request } from './lib/request';
export { H3Response, MAX_RESPONSE_FIELDS } from './lib/response';
export { loadIdentity } from './lib/identity';
// Workers: the `workers` option; in a worker thread, which one this is.
export { isPrimary, workerIndex } from './lib/workers';
export type { WorkerOptions, WorkerSteering } from './lib/workers';
export type { Identity } from './lib/identity';
export type { NativeCounters } from './native/binding';
export type { CongestionControl, EarlyDataMode, QuicLbOptions, RetryMode, TransportOptions } from './lib/transport-options';
export type { Logger, LogFormat, LogVerbosity } from './lib/log';
export { stderrLogger, silentLogger, createLogger } from './lib/log';
export { startMetrics, createMetricsRegistry, serveMetrics } from './lib/metrics';
export { serve } from './lib/serve';
export type { ServeOptions, SecureServerFactory, ListenableServer } from './lib/serve';
export { toRequestListener } from './lib/fetch-adapter';
export type { FetchHandler, FetchEnv, FetchAdapterOptions, NodeRequestLike, NodeResponseLike } from './lib/fetch-adapter';
export type { MetricsEndpoint, MetricsOptions } from './lib/metrics';
// node:http2-compatible server (createSecureServer and its compatibility API).
export { createSecureServer, Http3SecureServer } from './lib/compat/server';
export type {
  Http3RequestListener,
  ListenOptions,
  PemInput,
  SecureServerOptions,
  TcpSide,
  TcpSideFactory,
} from './lib/compat/server';
export type { IdentityInput, SniCallback, SniContext, TlsInput } from './lib/compat/tls-material';
export { Http3ServerRequest } from './lib/compat/request';
export { Http3ServerResponse } from './lib/compat/response';
export type { OutgoingHeaderInput, OutgoingHeaders, WriteCallback } from './lib/compat/response';
export type { IncomingHeaders } from './lib/compat/header-rules';
export { Http3ConnectionSocket, Http3StreamSocket } from './lib/compat/socket';
export type { StreamResetError } from './lib/compat/errors';
export { H3Code, h3CodeName } from './lib/request-stream';
// WebTransport sessions for applications (createSecureServer's `webtransport`).
export { WebTransportSession, MAX_DATAGRAM_SIZE } from './lib/webtransport/session';
export type { WebTransportCloseInfo, WebTransportDatagramDuplexStream } from './lib/webtransport/session';
export { WebTransportSessionRequest } from './lib/webtransport/session-request';
export type { AcceptOptions } from './lib/webtransport/session-request';
export { WebTransportBidirectionalStream } from './lib/webtransport/stream';
export { WebTransportError } from './lib/webtransport/error';
export type { WebTransportLimits } from './lib/webtransport/limits';
export { toHttp3ErrorCode, fromHttp3ErrorCode } from './lib/webtransport/error-codes';
