import type { Logger } from '../log';
import type { RequestHandler, ServerOptions } from '../server';

/** A demo profile: the server options and handler it runs with. */
export interface ProfileDefinition {
  name: string;
  title: string;
  create(logger: Logger): { options: ServerOptions; handler: RequestHandler };
}
