/**
 * A real headless Chromium (playwright-core with Debian's chromium) logs into the dashboard,
 * finds an environment, protects it, and sees the change. Screenshot: test-output/dashboard.png.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestServer, postEvents, session, type TestServer } from './helpers.js';

const outputDir = fileURLToPath(new URL('../../test-output/', import.meta.url));

describe('dashboard in Chromium', () => {
  let s: TestServer;
  let url: string;
  let browser: Browser;
  beforeAll(async () => {
    s = await createTestServer('sqlite');
    url = await s.app.listen({ port: 0, host: '127.0.0.1' });
    for (const user of ['alice', 'bob', 'carol']) {
      const a = session({ user, command: 'deploy' });
      await postEvents(s, [
        a.started({ afterInactivity: '8h', action: 'delete' }),
        a.ns('ready', { uid: `uid-${user}` }),
        a.action(),
        a.completed(),
      ]);
    }
    const hostile = session({ project: '<script>window.pwned=1</script>', user: 'mallory' });
    await postEvents(s, [hostile.started(), hostile.ns('ready', { uid: 'm' })]);
    browser = await chromium.launch({
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
  });
  afterAll(async () => {
    await browser?.close();
    await s.close();
  });

  it('logs in, finds an environment, protects it and sees the change', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${url}/`);
    expect(new URL(page.url()).pathname).toBe('/login');

    await page.fill('input[name="token"]', s.tokens.admin);
    await Promise.all([page.waitForURL(`${url}/`), page.click('button[type="submit"]')]);
    const cookies = await page.context().cookies();
    expect(cookies.find((c) => c.name === 'tend_session')).toMatchObject({ httpOnly: true, sameSite: 'Lax' });

    // Hostile names are text, not markup.
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    await expect(
      page
        .locator('#environments tbody td:first-child', { hasText: '<script>window.pwned=1</script>' })
        .count(),
    ).resolves.toBe(1);

    // Find bob's environment with the filter form.
    await page.fill('input[name="project"]', 'shop');
    await Promise.all([page.waitForURL(/project=shop/), page.click('form.filters button[type="submit"]')]);
    const row = page.locator('#environments tbody tr', { hasText: 'shop-bob' });
    await expect(row.count()).resolves.toBe(1);
    await expect(row.locator('td').nth(6).innerText()).resolves.toBe('no');
    await Promise.all([page.waitForURL(/\/environments\//), row.getByRole('link', { name: 'dev' }).click()]);

    await expect(page.locator('h1').innerText()).resolves.toContain('shop / dev');
    await expect(page.locator('#resources').innerText()).resolves.toContain('uid-bob');
    await expect(page.locator('#timeline').innerText()).resolves.toContain('bob ran tend deploy');

    await Promise.all([page.waitForLoadState('load'), page.getByRole('button', { name: 'Protect' }).click()]);
    await expect(page.locator('#status .badge.protected').innerText()).resolves.toBe('protected');
    await expect(page.getByRole('button', { name: 'Unprotect' }).count()).resolves.toBe(1);

    // The list shows it too.
    await page.goto(`${url}/?project=shop`);
    const after = page.locator('#environments tbody tr', { hasText: 'shop-bob' });
    await expect(after.locator('.badge.protected').count()).resolves.toBe(1);

    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: `${outputDir}dashboard.png`, fullPage: true });

    const env = await s.database.db
      .selectFrom('environments')
      .selectAll()
      .where('namespace', '=', 'shop-bob')
      .executeTakeFirstOrThrow();
    expect(Number(env.protected)).toBe(1);
    expect(env.protected_by).toBe('dashboard:ops');
  });
});
