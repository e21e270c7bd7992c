// Where things are in the checkout, for tests and the bench harness alike.
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
/** The built command line (`npm run build:ts`). */
export const CLI = path.join(ROOT, 'dist', 'cli.js');
/** The project-local virtualenv's interpreter (scripts/setup-python.sh), with aioquic. */
export const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
