// Which h3-node a bench run starts (this checkout, or a baseline commit built
// beside it: baseline.ts), and how each one's native-handler path starts,
// which depends on the design the checkout has:
//
//   older checkouts: the bench answerer is part of every addon, switched on
//     by H3_BENCH_NATIVE_HANDLER=a|c in the launcher's environment;
//   newer ones: the launcher takes --native a|c (the library reads no
//     environment), and the answerer sits behind the cargo feature
//     `bench-handler`, which the shipped addon does not enable: the bench
//     builds a variant of the addon with it and adds --addon <file>.
//
// A checkout whose launcher takes --native but whose crates do not gate the
// answerer yet (the two halves of that change landed one after the other) runs
// --native on its shipped addon.
import fs from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../test/helpers/process';
import { ROOT, WORK } from './config';
import { log } from './log';

export const BENCH_FEATURE = 'bench-handler';

export type NativePath =
  | { kind: 'environment' }
  | { kind: 'flag'; /** The variant built with the feature; the shipped addon when absent. */ addon?: string }
  | { kind: 'unavailable'; why: string };

export interface H3NodeBuild {
  /** 'current', or 'baseline <short sha>'. */
  name: string;
  /** The checkout whose bench/servers/h3-node.mjs and dist/ run. */
  root: string;
  native: NativePath;
}

/** This checkout, as built by `npm run build`, with the native path its design calls for. */
export async function currentBuild(): Promise<H3NodeBuild> {
  return { name: 'current', root: ROOT, native: await nativePath(ROOT, 'current') };
}

/** How `root`'s native-handler path starts; builds the addon variant when its design needs one. */
export async function nativePath(root: string, name: string): Promise<NativePath> {
  const takesFlag = fs.readFileSync(path.join(root, 'bench/servers/h3-node.mjs'), 'utf8').includes('--native');
  const gated = await declaresBenchFeature(root);
  if (!takesFlag) {
    // The environment variable would reach no answerer: the native rows
    // would silently measure TypeScript.
    if (gated) return { kind: 'unavailable', why: `the crates declare ${BENCH_FEATURE} but bench/servers/h3-node.mjs takes no --native flag` };
    return { kind: 'environment' };
  }
  return gated ? buildBenchVariant(root, name) : { kind: 'flag' };
}

/** Whether one of the checkout's crates declares the cargo feature (the newer design). */
async function declaresBenchFeature(root: string): Promise<boolean> {
  const listed = await runProcess('git', ['-C', root, 'ls-files', '--', 'Cargo.toml', '*/Cargo.toml']);
  const declaration = new RegExp(`^\\s*${BENCH_FEATURE}\\s*=`, 'm');
  return listed.stdout
    .split('\n')
    .filter(Boolean)
    .some((file) => declaration.test(fs.readFileSync(path.join(root, file), 'utf8')));
}

/**
 * The checkout's own `npm run build:native:bench` (build:native plus
 * --features bench-handler, into <root>/bench/.work/addon-bench), the same
 * build scripts/test.sh makes for test/integration/bench-harness.test.ts. It shares the
 * checkout's cargo target directory, so only the two crates of the project
 * are compiled again. Nice'd: the machine may be shared.
 */
export async function buildBenchVariant(root: string, name: string): Promise<NativePath> {
  const slug = name.replace(/\s+/g, '-');
  const outDir = path.join(root, 'bench/.work/addon-bench');
  const logFile = path.join(WORK, `${slug}-addon-bench-build.log`);
  const scripts = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts ?? {};
  if (!scripts['build:native:bench']) return { kind: 'unavailable', why: `package.json has no build:native:bench script` };
  log(`h3-node ${name}: building the addon with --features ${BENCH_FEATURE} (nice; log: ${path.relative(ROOT, logFile)})`);
  const r = await runProcess('nice', ['-n', '10', 'npm', 'run', '--silent', 'build:native:bench'], { cwd: root, outputFile: logFile });
  if (r.code !== 0) {
    const error = `${r.stderr}\n${r.stdout}`.split('\n').find((l) => /^error\b/.test(l.trim())) ?? `npm run build:native:bench exited ${r.code}`;
    return { kind: 'unavailable', why: `building the addon with --features ${BENCH_FEATURE} failed: ${error.trim()} (log: ${path.relative(ROOT, logFile)})` };
  }
  const addon = fs.existsSync(outDir) ? fs.readdirSync(outDir).find((f) => f.endsWith('.node')) : undefined;
  if (!addon) return { kind: 'unavailable', why: `npm run build:native:bench left no .node file in ${path.relative(ROOT, outDir)}` };
  return { kind: 'flag', addon: path.join(outDir, addon) };
}
