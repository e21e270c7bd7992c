// Loads the napi-rs addon: the one `npm run build:native` built into
// dist/native/, or the platform package's (h3-node-<platform>, napi-rs's
// layout: one package per platform, each an optional dependency of the main
// one with os, cpu and libc fields, so npm installs only the one that fits).
// Paths are resolved from the package root so the same loader works from
// src/ (tests under tsx) and from dist/ (the published package).
import fs from 'node:fs';
import path from 'node:path';

// The addon's types are generated from the Rust exports by `napi build`
// (src/native/addon.d.ts); this file only finds and loads the binary.
import type {
  createWorkerGroup,
  limits,
  listen,
  releaseFreeNativeMemory,
  releaseWorkerGroup,
  workerGroupStats,
  zeroCounters,
  NativeAddress,
  NativeCounters,
  NativeGroupStats,
  NativeIdentity,
  NativeLimits,
  NativeOptions,
  NativeServer,
  NativeTls,
  NativeWorkerStats,
} from './addon';

export type { NativeAddress, NativeCounters, NativeGroupStats, NativeIdentity, NativeLimits, NativeOptions, NativeServer, NativeTls, NativeWorkerStats };

interface Addon {
  listen: typeof listen;
  limits: typeof limits;
  releaseFreeNativeMemory: typeof releaseFreeNativeMemory;
  createWorkerGroup: typeof createWorkerGroup;
  releaseWorkerGroup: typeof releaseWorkerGroup;
  workerGroupStats: typeof workerGroupStats;
  zeroCounters: typeof zeroCounters;
  NativeIdentity: typeof NativeIdentity;
}

const packageRoot = path.resolve(__dirname, '..', '..');

/** Platforms with a prebuilt addon package (h3-node-<platform>; README, "Platforms"). */
export const PREBUILT_PLATFORMS = ['linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl', 'darwin-arm64', 'darwin-x64'] as const;

/** This process's platform in napi-rs's naming: os-arch, plus the C library on Linux (gnu or musl). */
export function platformName(): string {
  const base = `${process.platform}-${process.arch}`;
  if (process.platform !== 'linux') return base;
  // glibc's version is in the process report; a musl Node has none.
  const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
  return `${base}-${header?.glibcVersionRuntime ? 'gnu' : 'musl'}`;
}

/**
 * Where the addon is: a build in this checkout (dist/native, `npm run
 * build`), else the platform package npm installed beside this one (an
 * optional dependency whose os, cpu and libc fields match). Throws one line
 * naming the platform when neither exists.
 */
function findAddon(): string {
  const platform = platformName();
  const file = `h3core.${platform}.node`;
  const local = path.join(packageRoot, 'dist', 'native', file);
  if (fs.existsSync(local)) return local;
  try {
    return require.resolve(`h3-node-${platform}/${file}`, { paths: [packageRoot] });
  } catch {
    // Not installed: said below.
  }
  const known = (PREBUILT_PLATFORMS as readonly string[]).includes(platform);
  throw new Error(
    known
      ? `h3-node: the addon for ${platform} is not installed (package h3-node-${platform}, an optional dependency: reinstall without --no-optional / --omit=optional), and no build in ${path.join(packageRoot, 'dist', 'native')}`
      : `h3-node: no prebuilt addon for ${platform} (prebuilt: ${PREBUILT_PLATFORMS.join(', ')}); build it from source with Rust, cmake and clang: README, "Build from source"`,
  );
}

/** Found when this module loads, so `require('h3-node')` on a platform without an addon fails at once. */
const ADDON_FILE = findAddon();

let loaded: Addon | undefined;

/** The addon in dist/native, or the one at `addonPath` (a benchmark variant; see src/lib/dev-hooks.ts). */
export function addon(addonPath?: string): Addon {
  if (addonPath !== undefined) {
    const file = path.resolve(addonPath);
    if (!fs.existsSync(file)) throw new Error(`native addon ${file} not found`);
    return require(file) as Addon;
  }
  loaded ??= require(ADDON_FILE) as Addon;
  return loaded;
}

export { packageRoot };
