// Public API of h3-node.
export { createServer, Http3Server } from './server';
export type {
  AddressInfo,
  BodyHandler,
  ConnectionCloseInfo,
  ConnectionInfo,
  RequestHandler,
  ServerOptions,
  WebTransportSessionInfo,
  WebTransportStreamInfo,
} from './server';
export { WebTransportStats } from './webtransport-stats';
export type { StatsDocument } from './webtransport-stats';
export { H3Request } from './request';
export { H3Response, MAX_RESPONSE_FIELDS } from './response';
export { loadIdentity, DEMO_CERT, DEMO_KEY } from './identity';
export type { Identity } from './identity';
export type { NativeCounters } from './native/binding';
export type { Logger, LogFormat, LogVerbosity } from './log';
export { stderrLogger, silentLogger, createLogger } from './log';
export { startMetrics, createMetricsRegistry, serveMetrics } from './metrics';
export type { MetricsEndpoint, MetricsOptions } from './metrics';
export { serveDemoPage } from './demo-page';
export type { DemoPage, DemoPageOptions } from './demo-page';
export { PROFILES } from './profiles';
export { BEARER_TOKEN, SESSION_COOKIE } from './profiles/profile-a';
export { BODY_CAP } from './profiles/profile-c';
