import type { Logger } from '../../lib/log';
import type { WebTransportStats } from '../webtransport-stats';
import type { Http3Server, RequestHandler, ServerOptions } from '../../lib/server';

/** A demo profile: the server options and handler it runs with. */
export interface ProfileDefinition {
  name: string;
  title: string;
  create(logger: Logger): {
    options: ServerOptions;
    handler: RequestHandler;
    /** Hooks the profile into the server before it listens (event listeners). */
    attach?: (server: Http3Server) => void;
    /** The WebTransport counters the profile reports (Profile B), for the demo page. */
    stats?: WebTransportStats;
  };
}
