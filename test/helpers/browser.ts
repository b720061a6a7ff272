import { chromium, type Browser } from 'playwright-core';

/** Debian's Chromium (`apt-get install chromium`; `npm test` installs it when it can). */
export const CHROMIUM = '/usr/bin/chromium';

/** Headless Chromium without the background traffic that slows and clutters a test run. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'] });
}
