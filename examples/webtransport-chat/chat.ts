// A WebTransport chat room on h3-node: one server serves the page over TCP
// (HTTP/2 and HTTP/1.1, with Alt-Svc) and the chat over HTTP/3.
//
//   messages  each message goes to the server on a unidirectional stream of
//             its own (UTF-8 text) and comes back to every member on one
//             the server opens: `{ from, text, at }` as JSON
//   presence  every member sends its name as a datagram each second; the
//             server sends everyone the names heard in the last 3 s, as a
//             datagram, each second
//   leaving   a member leaves when its session ends, or when it has not
//             been heard from for `memberTimeoutMs` (its session is then
//             closed): a closed tab does not always say so. Headless
//             Chromium was seen dropping a tab's QUIC connection without a
//             CONNECTION_CLOSE or a session capsule (about 1 close in 3,
//             qlog and a capture on lo), which only the idle timeout would
//             otherwise end, 30 s later.
//
// Run it:  npx tsx examples/webtransport-chat/chat.ts [port]
// then open https://localhost:<port>/ in a browser that trusts the
// certificate (the demo identity by default: see README "Profile B demo
// page" for the Chromium flags).
import fs from 'node:fs';
import path from 'node:path';
import { createSecureServer, Http3SecureServer, Logger, WebTransportSession } from '../../src/index';

const PAGE = fs.readFileSync(path.join(__dirname, 'page.html'), 'utf8');
/** Longest message taken; longer ones are cut. */
const MAX_MESSAGE = 4096;
/** A member not heard from for this long leaves the presence list. */
const PRESENCE_TTL_MS = 3000;
/**
 * A member not heard from for this long is dropped. Generous by default:
 * Chrome runs the timers of a tab hidden for over 5 minutes only once a
 * minute, so a heartbeat can be that late from a member who is still here.
 */
const MEMBER_TIMEOUT_MS = 65_000;

interface Member {
  session: WebTransportSession;
  name: string;
  seenAt: number;
}

export interface ChatServer {
  server: Http3SecureServer;
  /** Members now, by name. */
  members(): string[];
  close(): Promise<void>;
}

export function createChat(options: { cert?: string; key?: string; logger?: Logger; memberTimeoutMs?: number } = {}): ChatServer {
  const { memberTimeoutMs = MEMBER_TIMEOUT_MS, ...serverOptions } = options;
  const members = new Set<Member>();
  const server = createSecureServer({ ...serverOptions, webtransport: true, allowHTTP1: true, warnDemoIdentity: false }, (req, res) => {
    if (req.url === '/' || req.url?.startsWith('/?')) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(PAGE);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found\n');
    }
  });

  server.on('session', (request) => {
    if (!request.path.startsWith('/chat')) return request.reject(404);
    const name = (new URLSearchParams(request.path.split('?')[1] ?? '').get('name') ?? '').trim().slice(0, 32) || 'someone';
    const member: Member = { session: request.accept(), name, seenAt: Date.now() };
    members.add(member);
    member.session.closed.finally(() => members.delete(member)).catch(() => {});
    void receiveMessages(member);
    void receivePresence(member);
  });

  const broadcast = async (payload: string) => {
    const bytes = Buffer.from(payload);
    await Promise.all(
      [...members].map(async (m) => {
        try {
          const w = (await m.session.createUnidirectionalStream()).getWriter();
          await w.write(bytes);
          await w.close();
        } catch {
          // That member left meanwhile.
        }
      }),
    );
  };

  async function receiveMessages(member: Member): Promise<void> {
    try {
      for await (const stream of member.session.incomingUnidirectionalStreams) {
        const parts: Buffer[] = [];
        let size = 0;
        for await (const chunk of stream) {
          if (size < MAX_MESSAGE) parts.push(Buffer.from(chunk));
          size += chunk.length;
        }
        const text = Buffer.concat(parts).toString('utf8').slice(0, MAX_MESSAGE);
        if (text) await broadcast(JSON.stringify({ from: member.name, text, at: Date.now() }));
      }
    } catch {
      // The session ended.
    }
  }

  async function receivePresence(member: Member): Promise<void> {
    try {
      for await (const _ of member.session.datagrams.readable) member.seenAt = Date.now();
    } catch {
      // The session ended.
    }
  }

  const presence = setInterval(() => {
    const now = Date.now();
    for (const m of members) {
      if (now - m.seenAt < memberTimeoutMs) continue;
      members.delete(m);
      m.session.close({ closeCode: 0, reason: 'not heard from' });
    }
    const names = [...members].filter((m) => now - m.seenAt < PRESENCE_TTL_MS).map((m) => m.name);
    const datagram = Buffer.from(JSON.stringify(names)).subarray(0, 1100);
    for (const m of members) {
      const w = m.session.datagrams.writable.getWriter();
      w.write(datagram).catch(() => {});
      w.releaseLock();
    }
  }, 1000);
  presence.unref();

  return {
    server,
    members: () => [...members].map((m) => m.name),
    close: () =>
      new Promise<void>((resolve) => {
        clearInterval(presence);
        server.close(() => resolve());
      }),
  };
}

if (require.main === module) {
  const port = Number(process.argv[2] ?? 4433);
  const chat = createChat();
  chat.server.listen(port, () => console.log(`chat on https://localhost:${port}/ (HTTP/3 and TCP)`));
}
