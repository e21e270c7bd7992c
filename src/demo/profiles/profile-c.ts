// Profile C: the request body streams through the body callback chunk by
// chunk; a running total is kept and anything over 4096 bytes is cut off
// with 413 (spec, "Profile C").
import type { H3Request } from '../../lib/request';
import type { H3Response } from '../../lib/response';
import type { Logger } from '../../lib/log';
import type { ProfileDefinition } from './profile';

export const BODY_CAP = 4096;

const TOTAL = Symbol('profileC.bodyTotal');
type Totaled = H3Request & { [TOTAL]?: number };

export function createProfileC(logger: Logger) {
  // The running total rides on the request object itself, under a symbol
  // only this module knows, so it goes away with the request. (A WeakMap did
  // the same at a measured cost: every set is a GC ephemeron write barrier.)
  const onBody = (req: H3Request, chunk: Buffer, _final: boolean, res: H3Response): void => {
    const total = ((req as Totaled)[TOTAL] ?? 0) + chunk.length;
    if (total > BODY_CAP) {
      // Stop at once: no further chunks, no answer step. The native core
      // sends this response and STOP_SENDING (H3_NO_ERROR).
      res.status = 413;
      res.end();
      return;
    }
    (req as Totaled)[TOTAL] = total;
  };

  const handler = (req: H3Request, res: H3Response): void => {
    const total = (req as Totaled)[TOTAL] ?? 0;
    logger.info(`body complete: total=${total} bytes (${req.method} ${req.path})`);
    res.text(200, `${total}\n`);
  };

  return { onBody, handler };
}

export const profileC: ProfileDefinition = {
  name: 'c',
  title: 'Profile C (streamed request body, 4096-byte cap)',
  create: (logger) => {
    const { onBody, handler } = createProfileC(logger);
    return { options: { onBody }, handler };
  },
};
