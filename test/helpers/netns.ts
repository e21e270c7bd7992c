// Network namespaces for tests that want separate machines (root only; see
// ../shared/notes/test-environment.md): each namespace gets a veth pair to
// this one, 10.213.<n>.1 here and 10.213.<n>.2 inside, and a default route
// back, so a process inside is reached at its own address as a server on
// another machine would be.
import { execFileSync } from 'node:child_process';

export interface Namespace {
  readonly name: string;
  /** The namespace's address (where its servers listen). */
  readonly address: string;
  /** This side's end of the veth pair (10.213.<n>.1). */
  readonly hostLink: string;
  /** The namespace's end of the veth pair (10.213.<n>.2). */
  readonly innerLink: string;
  /** `ip <args>` run inside the namespace. */
  ip(...args: string[]): void;
  remove(): void;
}

/** `ip <args>` here (throws with ip's own message on failure). */
export function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Whether namespaces can be made here (root with CAP_NET_ADMIN). */
export function namespacesAllowed(): boolean {
  try {
    ip('netns', 'add', 'h3t-probe');
    ip('netns', 'del', 'h3t-probe');
    return true;
  } catch {
    return false;
  }
}

export function makeNamespace(n: number): Namespace {
  const name = `h3t-${process.pid}-${n}`;
  const host = `h3t${n}h${process.pid % 10000}`;
  const inner = `h3t${n}n${process.pid % 10000}`;
  try {
    ip('netns', 'del', name);
  } catch {
    // not there: the usual case
  }
  ip('netns', 'add', name);
  ip('link', 'add', host, 'type', 'veth', 'peer', 'name', inner);
  ip('link', 'set', inner, 'netns', name);
  ip('addr', 'add', `10.213.${n}.1/24`, 'dev', host);
  ip('link', 'set', host, 'up');
  ip('netns', 'exec', name, 'ip', 'addr', 'add', `10.213.${n}.2/24`, 'dev', inner);
  ip('netns', 'exec', name, 'ip', 'link', 'set', inner, 'up');
  ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  ip('netns', 'exec', name, 'ip', 'route', 'add', 'default', 'via', `10.213.${n}.1`);
  return {
    name,
    address: `10.213.${n}.2`,
    hostLink: host,
    innerLink: inner,
    ip: (...args: string[]) => ip('netns', 'exec', name, 'ip', ...args),
    // Deleting the namespace deletes its end of the pair, and with it both.
    remove: () => ip('netns', 'del', name),
  };
}
