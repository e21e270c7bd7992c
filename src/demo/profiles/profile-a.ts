// Profile A: a redirect, a cookie, and a route protected by a bearer token
// or that cookie (spec, "Profile A").
import type { H3Request } from '../../lib/request';
import type { H3Response } from '../../lib/response';
import type { ProfileDefinition } from './profile';

/** Fixed demo credentials, public by design. Lowercase because response field values go out lowercase. */
export const BEARER_TOKEN = 'h3-demo-token-2f9c';
export const SESSION_COOKIE = 'session=h3-demo-7b41e0';

/** Routing looks at the path only: the query string is ignored, the method too. */
export function routePath(path: string): string {
  const q = path.indexOf('?');
  return q === -1 ? path : path.slice(0, q);
}

export function isAuthorized(req: H3Request): boolean {
  return req.header('authorization') === `Bearer ${BEARER_TOKEN}` || req.cookie === SESSION_COOKIE;
}

export function handleProfileA(req: H3Request, res: H3Response): void {
  switch (routePath(req.path)) {
    case '/redirect':
      res.status = 302;
      res.addField('location', '/target');
      res.end();
      return;
    case '/login':
      res.addField('set-cookie', SESSION_COOKIE);
      res.text(200, 'login succeeded\n');
      return;
    case '/secret':
      if (isAuthorized(req)) res.text(200, 'secret: the owl flies at midnight\n');
      else res.text(401, 'unauthorized\n');
      return;
    default:
      res.text(404, 'not found\n');
  }
}

export const profileA: ProfileDefinition = {
  name: 'a',
  title: 'Profile A (redirect, cookie, authorization)',
  create: () => ({ options: {}, handler: handleProfileA }),
};
