// Every external test client (aioquic scripts, the quic-go programs) speaks
// the same way: an optional JSON plan on stdin, one JSON result on stdout.
import { spawn } from 'node:child_process';

/**
 * Runs `command args...`, writes `input` as JSON to its stdin when given,
 * and resolves with its stdout parsed as JSON. A process that prints no
 * valid JSON rejects with its exit code and stderr, named by `label`.
 */
export function runJsonProcess<T>(command: string, args: string[], input?: unknown, label = command): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(out) as T);
      } catch {
        reject(new Error(`${label} exited ${code}: ${err.trim() || out.trim()}`));
      }
    });
    if (input !== undefined) child.stdin!.end(JSON.stringify(input));
  });
}
