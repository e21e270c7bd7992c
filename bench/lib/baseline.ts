// --baseline <git-rev>: the previous design, checked out and built beside this
// one, measured in the same run on the same machine: W1 and W3, TypeScript
// and native paths, baseline and current in turn within every round (old,
// new, old, new...) so that drift of a shared machine hits both alike. The
// verdict is the "no speed lost": server CPU per request within 5 %
// of the baseline's, and a shipped addon no larger.
import fs from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../test/helpers/process';
import { addonGrowth, AddonGrowth, AddonSize, shippedAddonSize } from './addon-size';
import { H3NodeBuild, nativePath } from './builds';
import { cpuPerRequest, type Measured } from './clients';
import { BenchError, Params, ROOT, WORK } from './config';
import { log } from './log';
import { median } from './report';
import { startH3Node, stopServer } from './servers';
import { measureW1, measureW3 } from './workloads';

/** Current over baseline server CPU per request, at most. */
const TOLERANCE = 1.05;

export interface Baseline {
  rev: string;
  sha: string;
  build: H3NodeBuild;
}

type Workload = 'W1' | 'W3';
type Path = 'TypeScript' | 'native';
type Design = 'baseline' | 'current';

export interface ComparisonRow extends Measured {
  workload: Workload;
  path: Path;
  design: Design;
  round: number;
}

export interface Verdict {
  workload: Workload;
  path: Path;
  baseline_us: number;
  current_us: number;
  ratio: number;
  pass: boolean;
  skipped?: string;
}

export interface Comparison {
  baseline: { rev: string; sha: string; checkout: string };
  rounds: number;
  tolerance: number;
  rows: ComparisonRow[];
  verdicts: Verdict[];
  addon: { baseline: AddonSize; current: AddonSize; growth: AddonGrowth };
  pass: boolean;
  notes: string[];
}

async function git(args: string[]): Promise<string> {
  const r = await runProcess('git', args, { cwd: ROOT });
  if (r.code !== 0) throw new BenchError(`git ${args.join(' ')}: ${r.stderr.trim().split('\n')[0]}`);
  return r.stdout.trim();
}

/**
 * Checks `rev` out in bench/.work/baseline-<short sha> (a detached git
 * worktree, kept between runs), links this checkout's node_modules into it,
 * and builds it there once (`npm run build`, nice'd, with a cargo target
 * directory of its own under bench/.work).
 */
export async function prepareBaseline(rev: string): Promise<Baseline> {
  const sha = await git(['rev-parse', '--verify', '--quiet', `${rev}^{commit}`]).catch(() => {
    throw new BenchError(`--baseline ${rev}: not a commit of this repository`);
  });
  const short = await git(['rev-parse', '--short', sha]);
  const dir = path.join(WORK, `baseline-${short}`);
  if (!fs.existsSync(path.join(dir, '.git'))) {
    await git(['worktree', 'prune']);
    await git(['worktree', 'add', '--detach', dir, sha]);
  }
  // Cargo looks upwards for a workspace; the baseline lives inside this
  // checkout, so it is made a workspace of its own rather than taken for an
  // undeclared member of this one's.
  const manifest = path.join(dir, 'Cargo.toml');
  if (!/^\[workspace\]/m.test(fs.readFileSync(manifest, 'utf8'))) fs.appendFileSync(manifest, '\n[workspace]\n');
  if (!fs.existsSync(path.join(dir, 'node_modules'))) fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));

  const built = path.join(WORK, `baseline-${short}.built`);
  if (!fs.existsSync(built)) {
    const logFile = path.join(WORK, `baseline-${short}-build.log`);
    // From the commit that patched quiche on, its Cargo.toml expects the
    // patched crate in the checkout (scripts/setup.sh makes it there).
    if (fs.existsSync(path.join(dir, 'scripts/patch-quiche.sh'))) {
      const p = await runProcess('bash', ['scripts/patch-quiche.sh'], { cwd: dir, outputFile: logFile });
      if (p.code !== 0) throw new BenchError(`patching quiche for the baseline ${rev} failed (see ${path.relative(ROOT, logFile)})`);
    }
    log(`baseline ${rev} (${short}): building in ${path.relative(ROOT, dir)} (nice; log: ${path.relative(ROOT, logFile)})`);
    const r = await runProcess('nice', ['-n', '10', 'npm', 'run', 'build'], {
      cwd: dir,
      env: { CARGO_TARGET_DIR: path.join(WORK, 'target-baseline') },
      outputFile: logFile,
    });
    if (r.code !== 0) throw new BenchError(`building the baseline ${rev} failed (see ${path.relative(ROOT, logFile)})`);
    fs.writeFileSync(built, `${sha}\n`);
  }
  const name = `baseline ${short}`;
  return { rev, sha, build: { name, root: dir, native: await nativePath(dir, name) } };
}

/** Measures both designs round by round, then compares their medians and their shipped addons. */
export async function compareWithBaseline(P: Params, current: H3NodeBuild, baseline: Baseline): Promise<Comparison> {
  const designs: Array<[Design, H3NodeBuild]> = [
    ['baseline', baseline.build],
    ['current', current],
  ];
  const notes: string[] = [];
  const nativeMissing = designs
    .map(([design, b]) => (b.native.kind === 'unavailable' ? `${design}: ${b.native.why}` : ''))
    .filter(Boolean)
    .join('; ');
  if (nativeMissing) notes.push(`native path not compared (${nativeMissing})`);
  const paths: Path[] = nativeMissing ? ['TypeScript'] : ['TypeScript', 'native'];

  const rows: ComparisonRow[] = [];
  for (let round = 1; round <= P.rounds; round++) {
    log(`baseline comparison, round ${round}/${P.rounds}: W1 and W3, ${paths.join(' and ')} path, baseline then current`);
    for (const workload of ['W1', 'W3'] as const) {
      for (const p of paths) {
        for (const [design, build] of designs) {
          const s = await startH3Node(build, workload === 'W1' ? 'a' : 'c', p === 'native');
          const m = await (workload === 'W1' ? measureW1 : measureW3)(P, s, s.port, { exactCpu: true });
          await stopServer(s);
          rows.push({ ...m, workload, path: p, design, round });
          log(
            `  ${workload} ${p.padEnd(10)} ${design.padEnd(8)} cpu ${cpuPerRequest(m).toFixed(2)} us/req  ${m.rps.toFixed(0).padStart(7)} req/s  ` +
              `errors ${m.errors + m.timeouts}`,
          );
        }
      }
    }
  }

  const verdicts: Verdict[] = [];
  for (const workload of ['W1', 'W3'] as const) {
    for (const p of ['TypeScript', 'native'] as const) {
      const cpu = (design: Design) =>
        median(rows.filter((r) => r.workload === workload && r.path === p && r.design === design).map(cpuPerRequest));
      const [old, now] = [cpu('baseline'), cpu('current')];
      // The ratio is the median of the rounds' own ratios: each round runs
      // the baseline and then the current build back to back, so a round's
      // ratio cancels the machine's drift between rounds, which the two
      // sides' separate medians would not.
      const perRound = (design: Design) =>
        rows.filter((r) => r.workload === workload && r.path === p && r.design === design).map(cpuPerRequest);
      const [olds, nows] = [perRound('baseline'), perRound('current')];
      const ratio = median(nows.map((n, i) => n / olds[i]).filter(Number.isFinite));
      const skipped = paths.includes(p) ? undefined : 'no native handler';
      verdicts.push({ workload, path: p, baseline_us: old, current_us: now, ratio, pass: !skipped && ratio <= TOLERANCE, ...(skipped ? { skipped } : {}) });
    }
  }
  const sizes = { baseline: await shippedAddonSize(baseline.build.root, baseline.build.name), current: await shippedAddonSize(ROOT, 'current') };
  const addon = { ...sizes, growth: addonGrowth(sizes.baseline, sizes.current) };
  const pass = verdicts.every((v) => v.pass) && addon.growth.noLarger;
  return {
    baseline: { rev: baseline.rev, sha: baseline.sha, checkout: path.relative(ROOT, baseline.build.root) },
    rounds: P.rounds,
    tolerance: TOLERANCE,
    rows,
    verdicts,
    addon,
    pass,
    notes,
  };
}
