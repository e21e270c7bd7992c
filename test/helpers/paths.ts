// Where things are in the checkout, for tests and the bench harness alike.
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');
/** The built command line (`npm run build:ts`). */
export const CLI = path.join(ROOT, 'dist', 'cli.js');
/** The project-local virtualenv's interpreter (scripts/setup-python.sh), with aioquic. */
export const PYTHON = path.join(ROOT, '.venv', 'bin', 'python');
/** The demo certificate and key, and the other test identities. */
export const CERTS = path.join(ROOT, 'certs');
/** The client programs the tests drive: the Python (aioquic) scripts and the quic-go client. */
export const CLIENTS = path.join(__dirname, 'clients');
/** Programs the tests start as child processes (servers, churn loops). */
export const FIXTURES = path.join(__dirname, 'fixtures');
