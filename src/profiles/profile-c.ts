// Profile C: the request body streams through the body callback chunk by
// chunk; a running total is kept and anything over 4096 bytes is cut off
// with 413 (spec, "Profile C").
import type { H3Request } from '../request';
import type { H3Response } from '../response';
import type { Logger } from '../log';
import type { ProfileDefinition } from './profile';

export const BODY_CAP = 4096;

export function createProfileC(logger: Logger) {
  // Running total per body in progress; entries leave when the body ends,
  // is cut off, or the request goes away (WeakMap).
  const totals = new WeakMap<H3Request, number>();

  const onBody = (req: H3Request, chunk: Buffer, _final: boolean, res: H3Response): void => {
    const total = (totals.get(req) ?? 0) + chunk.length;
    if (total > BODY_CAP) {
      // Stop at once: no further chunks, no answer step. The native core
      // sends this response and STOP_SENDING (H3_NO_ERROR).
      totals.delete(req);
      res.status = 413;
      res.end();
      return;
    }
    totals.set(req, total);
  };

  const handler = (req: H3Request, res: H3Response): void => {
    const total = totals.get(req) ?? 0;
    totals.delete(req);
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
