/** The browser of the dashboard tests. */
import { chromium, type Browser } from 'playwright-core';

/** Debian's headless Chromium through playwright-core, as the dashboard tests drive it. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
