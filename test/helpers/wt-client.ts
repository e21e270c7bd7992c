// Drives test/clients/wt_client.py: WebTransport sessions, streams and
// datagrams from aioquic (see that file for the action list).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { PYTHON } from './h3client';

const CLIENT = path.resolve(__dirname, '..', 'clients', 'wt_client.py');

export type WtAction = { op: string; [key: string]: unknown };

export interface WtResult {
  connected: boolean;
  results: Record<string, any>[];
  connection_terminated: { error_code: number; reason: string } | null;
  error?: string;
}

export function runWt(port: number, actions: WtAction[], opts: { timeout?: number; close?: null } = {}): Promise<WtResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, [CLIENT, '--host', '127.0.0.1', '--port', String(port)]);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      try {
        resolve(JSON.parse(out) as WtResult);
      } catch {
        reject(new Error(`wt_client exited ${code}: ${err.trim() || out.trim()}`));
      }
    });
    const plan: Record<string, unknown> = { timeout: opts.timeout ?? 5, actions };
    if ('close' in opts) plan.close = opts.close;
    child.stdin.end(JSON.stringify(plan));
  });
}

export const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');
