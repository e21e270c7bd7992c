// Drives test/helpers/clients/wt_client.py: WebTransport sessions, streams and
// datagrams from aioquic (see that file for the action list).
import path from 'node:path';
import { runPythonClient } from './h3client';

const CLIENT = path.join(__dirname, 'wt_client.py');

export type WtAction = { op: string; [key: string]: unknown };

export interface WtResult {
  connected: boolean;
  results: Record<string, any>[];
  connection_terminated: { error_code: number; reason: string } | null;
  error?: string;
}

export function runWt(port: number, actions: WtAction[], opts: { timeout?: number; close?: null } = {}): Promise<WtResult> {
  const plan: Record<string, unknown> = { timeout: opts.timeout ?? 5, actions };
  if ('close' in opts) plan.close = opts.close;
  return runPythonClient<WtResult>(CLIENT, port, plan);
}
