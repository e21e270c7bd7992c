// What the kernel says about CPU time and memory: per process (/proc/<pid>)
// and per core (/proc/stat).
import fs from 'node:fs';
import { CLIENT_CORE, SERVER_CORE } from './config';

/** utime + stime of the processes, in clock ticks (taskset execs in place, so its pid is the server's). */
export function cpuTicks(pids: number[]): number {
  let t = 0;
  for (const pid of pids) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    t += Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14, 15)
  }
  return t;
}

/**
 * CPU time of the processes' threads in nanoseconds, from the scheduler
 * (/proc/<pid>/task/<tid>/schedstat, its first field): exact where utime +
 * stime count whole clock ticks (10 ms), which matters when two runs of a
 * few hundred ticks each are compared to within a few percent. Threads that
 * exit between two readings drop out; the servers' threads live as long as
 * the server.
 */
export function cpuNanos(pids: number[]): number {
  let ns = 0;
  for (const pid of pids) {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        ns += Number(fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
      } catch {
        // The thread exited while we listed them.
      }
    }
  }
  return ns;
}

export function statusKiB(pids: number[], key: 'VmHWM' | 'VmRSS'): number {
  let kib = 0;
  for (const pid of pids) {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`${key}:\\s+(\\d+) kB`));
    kib += m ? Number(m[1]) : 0;
  }
  return kib;
}

/** Per-core [busy, total] jiffies from /proc/stat, every process included. */
function coreTimes(core: string): [number, number] {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith(`cpu${core} `));
  if (!line) return [0, 0];
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const total = v.reduce((a, b) => a + b, 0);
  return [total - v[3] - v[4], total]; // minus idle and iowait
}

/** Measures how busy both cores were over `run`, whoever used them. */
export async function withCores<T>(run: () => Promise<T>): Promise<{ value: T; serverCore: number; clientCore: number }> {
  const s0 = coreTimes(SERVER_CORE);
  const c0 = coreTimes(CLIENT_CORE);
  const value = await run();
  const s1 = coreTimes(SERVER_CORE);
  const c1 = coreTimes(CLIENT_CORE);
  const share = (a: [number, number], b: [number, number]) => (b[1] > a[1] ? (b[0] - a[0]) / (b[1] - a[1]) : 0);
  return { value, serverCore: share(s0, s1), clientCore: share(c0, c1) };
}
