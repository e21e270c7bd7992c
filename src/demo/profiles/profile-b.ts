// Profile B: WebTransport sessions, streams and datagrams, and `/stats`
// reporting them (spec, "Profile B").
import type { H3Request } from '../../lib/request';
import type { H3Response } from '../../lib/response';
import { WebTransportStats } from '../webtransport-stats';
import { routePath } from './profile-a';
import type { ProfileDefinition } from './profile';

export function createProfileB(stats: WebTransportStats) {
  return (req: H3Request, res: H3Response): void => {
    if (routePath(req.path) === '/stats') {
      res.json(200, stats.snapshot());
      return;
    }
    // 404 with an empty body and no content type.
    res.status = 404;
    res.end();
  };
}

export const profileB: ProfileDefinition = {
  name: 'b',
  title: 'Profile B (WebTransport statistics)',
  create: () => {
    const stats = new WebTransportStats();
    return {
      options: { webtransport: true },
      handler: createProfileB(stats),
      attach: (server) => stats.attach(server),
      stats,
    };
  },
};
