// Loads the napi-rs addon built by `npm run build:native` into dist/native/.
// The path is resolved from the package root so the same loader works from
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
  NativeLimits,
  NativeOptions,
  NativeServer,
  NativeWorkerStats,
} from './addon';

export type { NativeAddress, NativeCounters, NativeGroupStats, NativeLimits, NativeOptions, NativeServer, NativeWorkerStats };

interface Addon {
  listen: typeof listen;
  limits: typeof limits;
  releaseFreeNativeMemory: typeof releaseFreeNativeMemory;
  createWorkerGroup: typeof createWorkerGroup;
  releaseWorkerGroup: typeof releaseWorkerGroup;
  workerGroupStats: typeof workerGroupStats;
  zeroCounters: typeof zeroCounters;
}

const packageRoot = path.resolve(__dirname, '..', '..');

function findAddon(): string {
  const dir = path.join(packageRoot, 'dist', 'native');
  const prefix = `h3core.${process.platform}-${process.arch}`;
  const found = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.startsWith(prefix) && f.endsWith('.node')) : [];
  if (found.length === 0) {
    throw new Error(`native addon ${prefix}*.node not found in ${dir}; run \`npm run build\` first`);
  }
  return path.join(dir, found.sort()[0]);
}

let loaded: Addon | undefined;

/** The addon in dist/native, or the one at `addonPath` (a benchmark variant; see src/lib/dev-hooks.ts). */
export function addon(addonPath?: string): Addon {
  if (addonPath !== undefined) {
    const file = path.resolve(addonPath);
    if (!fs.existsSync(file)) throw new Error(`native addon ${file} not found`);
    return require(file) as Addon;
  }
  loaded ??= require(findAddon()) as Addon;
  return loaded;
}

export { packageRoot };
