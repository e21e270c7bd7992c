// The size of a checkout's shipped addon (dist/native/h3core.*.node) as
// scripts/pack.sh packs it: with `strip --strip-debug`.
//
// Two builds of the same sources differ in size by where they were built:
// BoringSSL's error macros keep the full path of each of its source files,
// which lies under cargo's target directory (159 of them in this addon), so
// /work/main/target and /work/main/bench/.work/target-baseline make a 3 KB
// difference that says nothing about the code. The comparison therefore
// also counts the size without those embedded build paths. What remains
// between two builds of the same sources is a hundred bytes or two (the
// padding of .rodata, and LLVM's hash suffixes of local symbol names, which
// strip --strip-debug keeps): BUILD_NOISE_BYTES.
import fs from 'node:fs';
import path from 'node:path';
import { runProcess } from '../../test/helpers/process';
import { BenchError, WORK } from './config';

export interface AddonSize {
  file: string;
  /** Stripped as scripts/pack.sh strips it. */
  bytes: number;
  /** Whether `strip --strip-debug` ran (scripts/pack.sh ships it unstripped without strip). */
  stripped: boolean;
  /** cargo's build directory as embedded in the binary, and how many times. */
  buildPath: { prefix: string; count: number } | null;
  /** `bytes` less the embedded build paths: what two builds of the same sources share wherever they were built. */
  bytesWithoutBuildPaths: number;
}

/** How far apart two builds of the same sources in different directories come out, without their build paths (measured: 79 bytes). */
export const BUILD_NOISE_BYTES = 256;

export interface AddonGrowth {
  /** Current less baseline, both without their build paths. */
  bytes: number;
  /** Smaller, or larger by no more than two builds of the same sources differ. */
  noLarger: boolean;
}

export function addonGrowth(baseline: AddonSize, current: AddonSize): AddonGrowth {
  const bytes = current.bytesWithoutBuildPaths - baseline.bytesWithoutBuildPaths;
  return { bytes, noLarger: bytes <= BUILD_NOISE_BYTES };
}

export async function shippedAddonSize(root: string, name: string): Promise<AddonSize> {
  const dir = path.join(root, 'dist/native');
  const file = fs.existsSync(dir) ? fs.readdirSync(dir).find((f) => /^h3core\..*\.node$/.test(f)) : undefined;
  if (!file) throw new BenchError(`no shipped addon in ${dir} (npm run build)`);
  const copy = path.join(WORK, `shipped-${name.replace(/\s+/g, '-')}.node`);
  fs.copyFileSync(path.join(dir, file), copy);
  const strip = await runProcess('strip', ['--strip-debug', copy]).catch(() => undefined);
  const bin = fs.readFileSync(copy);
  const buildPath = embeddedBuildPath(bin);
  return {
    file: path.join(dir, file),
    bytes: bin.length,
    stripped: strip?.code === 0,
    buildPath,
    bytesWithoutBuildPaths: bin.length - (buildPath ? buildPath.count * buildPath.prefix.length : 0),
  };
}

/**
 * The most frequent path before ".../release/build/" in the binary's
 * NUL-terminated strings (cargo's target directory and target triple), and
 * how many times it occurs anywhere in the binary.
 */
function embeddedBuildPath(bin: Buffer): { prefix: string; count: number } | null {
  const marker = Buffer.from('/release/build/');
  const seen = new Map<string, number>();
  for (let i = bin.indexOf(marker); i !== -1; i = bin.indexOf(marker, i + 1)) {
    const start = bin.lastIndexOf(0, i) + 1;
    const prefix = bin.toString('latin1', start, i);
    if (prefix.startsWith('/')) seen.set(prefix, (seen.get(prefix) ?? 0) + 1);
  }
  const [prefix] = [...seen].sort((a, b) => b[1] - a[1])[0] ?? [];
  if (!prefix) return null;
  const needle = Buffer.from(prefix, 'latin1');
  let count = 0;
  for (let i = bin.indexOf(needle); i !== -1; i = bin.indexOf(needle, i + needle.length)) count++;
  return { prefix, count };
}
