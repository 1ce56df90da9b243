/**
 * A real headless Chromium (playwright-core with Debian's chromium) logs into the dashboard,
 * finds an environment, protects it, and sees the change; opens the Cleanup page and enforces a
 * policy. Screenshots: test-output/dashboard.png, test-output/cleanup.png.
 */
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EnvironmentRepository } from '../../src/server/db/repositories/environments.js';
import { launchChromium } from '../helpers/chromium.js';
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
    // An executor reports the cluster, and a planning pass decides.
    const agent = async (url: string, payload: object) => {
      const res = await s.app.inject({ method: 'POST', url, headers: s.auth(s.tokens.agent), payload });
      expect(res.statusCode, res.body).toBe(200);
    };
    const targetKey = 'kubernetes/cluster-1';
    await agent('/api/v1/agents/heartbeat', {
      executorId: 'embedded-1',
      name: 'tend server (embedded)',
      kind: 'embedded',
      version: '0.1.0',
      targets: [{ targetKey, pluginName: 'kubernetes', description: 'context dev' }],
    });
    await agent('/api/v1/agents/inventory', {
      executorId: 'embedded-1',
      targetKey,
      pluginName: 'kubernetes',
      complete: true,
      items: ['alice', 'bob', 'carol', 'stray'].map((user) => ({
        namespaceName: `shop-${user}`,
        uid: `uid-${user}`,
        version: '1',
        state: 'active',
        managedByTend: true,
        project: 'shop',
        environment: 'dev',
        adopted: false,
      })),
    });
    await s.app.cleanup.pass.run();
    browser = await launchChromium();
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

  it('is usable 420 px wide: cards, search, counts and the chart, nothing off-screen, CSP intact', async () => {
    // Two past days recorded (the server does this every 10 minutes), so the chart has history.
    const repo = new EnvironmentRepository(s.database.db, s.database.reader);
    for (const daysAgo of [3, 2, 1])
      await repo.recordStateCounts(new Date(Date.now() - daysAgo * 86_400_000));
    const page = await browser.newPage({ viewport: { width: 420, height: 900 } });
    const violations: string[] = [];
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text());
    });
    page.on('pageerror', (e) => violations.push(e.message));
    await page.goto(`${url}/login`);
    await page.fill('input[name="token"]', s.tokens.developer);
    await Promise.all([page.waitForURL(`${url}/`), page.click('button[type="submit"]')]);

    const overflow = () => page.evaluate('document.documentElement.scrollWidth');
    await expect(overflow()).resolves.toBeLessThanOrEqual(420);
    // Rows are cards: no header row, each cell labelled.
    await expect(page.locator('#environments thead').isVisible()).resolves.toBe(false);
    const label = await page.evaluate(
      `getComputedStyle(document.querySelector('#environments tbody td'), '::before').content`,
    );
    expect(label).toBe('"Project"');
    // alice, bob and carol are active; mallory's namespace is not in the inventory: cleaned.
    await expect(page.locator('nav.counts').innerText()).resolves.toMatch(
      /All\s+4\s+active\s+3\s+cleaned\s+1/,
    );

    const chart = page.locator('#states-chart svg');
    const box = (await chart.boundingBox())!;
    expect(box.width).toBeGreaterThan(300);
    expect(box.x + box.width).toBeLessThanOrEqual(420);
    await expect(page.locator('#states-chart rect[data-state="active"]').count()).resolves.toBe(4);

    await page.fill('input[name="search"]', 'BOB');
    await Promise.all([page.waitForURL(/search=BOB/), page.click('form.filters button[type="submit"]')]);
    await expect(page.locator('#environments tbody tr').count()).resolves.toBe(1);
    await expect(page.locator('#environments tbody tr').innerText()).resolves.toContain('shop-bob');
    await expect(overflow()).resolves.toBeLessThanOrEqual(420);

    mkdirSync(outputDir, { recursive: true });
    await page.goto(`${url}/`);
    await page.screenshot({ path: `${outputDir}dashboard-420.png`, fullPage: true });

    // An environment's page too: wide tables scroll inside themselves, the page does not.
    await Promise.all([
      page.waitForURL(/\/environments\//),
      page
        .locator('#environments tbody tr', { hasText: 'shop-alice' })
        .getByRole('link', { name: 'dev' })
        .click(),
    ]);
    await expect(overflow()).resolves.toBeLessThanOrEqual(420);
    await expect(page.getByRole('button', { name: 'Keep alive' }).isVisible()).resolves.toBe(true);
    await page.screenshot({ path: `${outputDir}environment-420.png`, fullPage: true });
    expect(violations).toEqual([]);
  });

  it('opens the Cleanup page and enforces a policy', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(`${url}/login`);
    await page.fill('input[name="token"]', s.tokens.admin);
    await Promise.all([page.waitForURL(`${url}/`), page.click('button[type="submit"]')]);
    // The list's Next column tells when each environment is cleaned up.
    const bob = page.locator('#environments tbody tr', { hasText: 'shop-bob' });
    await expect(bob.locator('td.next-cell').innerText()).resolves.toMatch(/delete\s+in 8h/);

    await Promise.all([
      page.waitForURL(`${url}/cleanup`),
      page.getByRole('link', { name: 'Cleanup' }).click(),
    ]);
    await expect(page.locator('h1').innerText()).resolves.toBe('Cleanup');
    expect(await page.evaluate('window.pwned')).toBeUndefined();
    // Clusters by their context, not the kube-system uid of the target key.
    await expect(page.locator('#cleanup-executors').innerText()).resolves.toContain('context dev');
    await expect(page.locator('main').innerText()).resolves.not.toContain('cluster-1');
    await expect(page.locator('#cleanup-unrecorded').innerText()).resolves.toContain('shop-stray');
    await expect(page.locator('#cleanup-plan tbody tr').count()).resolves.toBe(3);
    const policy = page.locator('#cleanup-policies tbody tr', { hasText: 'shop' });
    await expect(policy.locator('.badge').innerText()).resolves.toBe('dry-run');

    await Promise.all([
      page.waitForURL(`${url}/cleanup`),
      policy.getByRole('button', { name: 'Enforce' }).click(),
    ]);
    await expect(
      page.locator('#cleanup-policies tbody tr', { hasText: 'shop' }).locator('.badge').innerText(),
    ).resolves.toBe('enforced');
    await expect(page.getByRole('button', { name: 'Enforce' }).count()).resolves.toBe(0);

    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: `${outputDir}cleanup.png`, fullPage: true });
    const enforced = await s.database.db.selectFrom('cleanup_policies').selectAll().execute();
    expect(enforced).toMatchObject([{ project: 'shop', environment: 'dev', enforced_by: 'dashboard:ops' }]);
  });
});
