// Headless Chromium from Debian, driven by playwright-core, forced onto QUIC
// for the server's origin and told to accept the demo certificate by its
// SPKI hash (never by disabling certificate checks wholesale). playwright
// gives every launch a fresh temporary profile directory.
import { chromium, Browser } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export interface Launched {
  browser: Browser;
  close(): Promise<void>;
}

export function launchChromium(origins: string[], spkiSha256: string): Promise<Launched> {
  return launchChromiumWithArgs([`--origin-to-force-quic-on=${origins.join(',')}`, `--ignore-certificate-errors-spki-list=${spkiSha256}`]);
}

/** Chromium with the given flags (the README's, say), plus those this machine needs to run it headless. */
export async function launchChromiumWithArgs(flags: string[]): Promise<Launched> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      ...flags,
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    browser,
    close: async () => {
      await browser.close();
    },
  };
}
