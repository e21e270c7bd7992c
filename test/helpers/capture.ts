// Loopback packet capture with Wireshark's dumpcap and decoding with tshark
// (Debian `tshark`, installed by scripts/setup-system.sh). Capturing on `lo`
// needs root or the capture capabilities; CI runs as root.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { PYTHON } from './paths';
import { runJsonProcess, startProcess } from './process';

const run = promisify(execFile);
const QPACK_DECODE = path.resolve(__dirname, 'clients', 'qpack_decode.py');

export interface Capture {
  stop(): Promise<void>;
}

/** Starts dumpcap on loopback for one UDP port; resolves once it is capturing. */
export async function startCapture(udpPort: number, file: string): Promise<Capture> {
  const dumpcap = startProcess('dumpcap', ['-i', 'lo', '-f', `udp port ${udpPort}`, '-w', file]);
  try {
    await dumpcap.waitFor(/Capturing on/, { stream: 'stderr' });
  } catch (e) {
    await dumpcap.stop({ signal: 'SIGKILL' });
    throw new Error(`dumpcap did not start capturing (apt-get install tshark): ${(e as Error).message}`);
  }
  return {
    // SIGINT: dumpcap flushes and closes the file.
    stop: async () => {
      await dumpcap.stop({ signal: 'SIGINT' });
    },
  };
}

export interface Http3Frame {
  frame: number;
  srcPort: number;
  type: number;
  payload: Buffer;
}

/** Every HTTP/3 frame tshark can see in the capture, with or without a TLS key log. */
export async function http3Frames(file: string, udpPort: number, keyLog?: string): Promise<Http3Frame[]> {
  const args = ['-r', file, '-d', `udp.port==${udpPort},quic`, '-Y', 'http3', '-T', 'fields', '-E', 'separator=/t'];
  if (keyLog) args.push('-o', `tls.keylog_file:${keyLog}`);
  args.push('-e', 'frame.number', '-e', 'udp.srcport', '-e', 'http3.frame_type', '-e', 'http3.frame_payload');
  const { stdout } = await run('tshark', args, { maxBuffer: 64 << 20 });
  const frames: Http3Frame[] = [];
  for (const line of stdout.split('\n').filter(Boolean)) {
    const [frame, src, types, payloads] = line.split('\t');
    const t = (types ?? '').split(',').filter(Boolean);
    const p = (payloads ?? '').split(',');
    t.forEach((type, i) =>
      frames.push({ frame: Number(frame), srcPort: Number(src), type: Number(type), payload: Buffer.from(p[i] ?? '', 'hex') }),
    );
  }
  return frames;
}

/** Decodes QPACK field sections with pylsqpack (aioquic's QPACK). */
export function decodeFieldSections(sections: Buffer[]): Promise<([string, string][] | { error: string })[]> {
  return runJsonProcess(PYTHON, [QPACK_DECODE], sections.map((s) => s.toString('hex')), 'qpack_decode.py');
}
