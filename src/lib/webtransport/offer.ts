// Hands a session request to a server's 'session' listeners, the same way
// for createServer and createSecureServer: each listener runs guarded, and
// one that throws or rejects refuses the session with 500 (the server
// keeps serving); with no listener the request is answered 404.
import type { EventEmitter } from 'node:events';
import type { Logger } from '../log';
import type { WebTransportSessionRequest } from './session-request';

export function offerSessionRequest(server: EventEmitter, request: WebTransportSessionRequest, logger: Logger): void {
  const listeners = server.rawListeners('session');
  if (listeners.length === 0) {
    request.reject(404);
    return;
  }
  const failed = (e: unknown) => {
    logger.error(`'session' listener failed on ${request.path}: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`);
    if (!request.decided && !request.aborted) request.reject(500);
  };
  for (const listener of listeners) {
    try {
      const result = listener.call(server, request);
      if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
        (result as PromiseLike<unknown>).then(undefined, failed);
      }
    } catch (e) {
      failed(e);
    }
  }
}
