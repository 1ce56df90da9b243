/**
 * axe-core, run in a real headless Chromium on every kind of dashboard page of a populated server
 * (test/server/populated.ts), finds no WCAG 2.x A or AA violation: the login page, the list (and
 * an empty search), an environment page in each state (active, protected, paused, cleaned), the
 * Cleanup page, the Savings page, a "not found" page, and the list, an environment page, the
 * Cleanup and the Savings pages 420 px wide; and with sign-in through an OpenID
 * provider: the login page with its button, the list as a signed-in person, the "No access yet"
 * page and the "Sign-in failed" page.
 */
import { readFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PersonSessionRepository } from '../../src/server/db/repositories/person-sessions.js';
import { personSessionCookie, sessionTtlMs } from '../../src/server/dashboard/common/session.js';
import { RolesFile } from '../../src/server/oidc/roles-file.js';
import { launchChromium } from '../helpers/chromium.js';
import { createTestServer, type TestServer } from './helpers.js';
import { populatedServer, type PopulatedServer } from './populated.js';

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
/** WCAG 2.0, 2.1 and 2.2, levels A and AA: the tags axe-core gives their rules. */
const wcagAA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22a', 'wcag22aa'];

interface AxeResults {
  violations: { id: string; impact: string | null; help: string; nodes: { target: unknown[] }[] }[];
  passes: { id: string }[];
  incomplete: { id: string }[];
}

/** Opens `url` and answers axe-core's WCAG A/AA violations there, one line per element. */
async function violationsAt(page: Page, url: string): Promise<string[]> {
  const response = await page.goto(url);
  expect(response, url).not.toBeNull();
  expect(response!.headers()['content-type'], url).toContain('text/html');
  // The page itself, not the login page a missing session redirects to.
  expect(new URL(page.url()).pathname, url).toBe(new URL(url).pathname);
  // The pages allow no script (their Content-Security-Policy): the context bypasses it for axe.
  await page.addScriptTag({ content: axeSource });
  const result = await page.evaluate(async (tags) => {
    const { axe } = globalThis as unknown as { axe: { run(options: object): Promise<AxeResults> } };
    const { violations, passes, incomplete } = await axe.run({ runOnly: { type: 'tag', values: tags } });
    return {
      violations,
      passed: passes.map((rule) => rule.id),
      undecided: incomplete.filter((rule) => rule.id !== 'color-contrast').map((rule) => rule.id),
    };
  }, wcagAA);
  // axe did check the page: rules of every page (a language, a title, landmarks…) passed.
  expect(result.passed, url).toEqual(expect.arrayContaining(['html-has-lang', 'document-title']));
  // What axe could not decide is decided here: nothing but the charts' contrast, below.
  expect(result.undecided, url).toEqual([]);
  const lowContrast = await chartTextBelowContrast(page);
  const { violations } = result;
  return [
    ...violations.flatMap((v) =>
      v.nodes.map((n) => `${v.id} (${v.impact ?? 'n/a'}): ${v.help} at ${JSON.stringify(n.target)}`),
    ),
    ...lowContrast,
  ];
}

/**
 * The charts' text (axes, labels) whose contrast with the page is under WCAG's 4.5:1: axe leaves
 * SVG text undecided ("could not determine the background"), so the ratio is worked out here, the
 * text's fill against the background of the nearest element that has one.
 */
function chartTextBelowContrast(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const { document, getComputedStyle } = globalThis as unknown as {
      document: { querySelectorAll(s: string): Iterable<ChartElement> };
      getComputedStyle(e: ChartElement): { fill: string; backgroundColor: string };
    };
    interface ChartElement {
      parentElement: ChartElement | null;
      textContent: string | null;
    }
    const channels = (colour: string) => (colour.match(/[\d.]+/g) ?? []).map(Number);
    const luminance = (colour: string) => {
      const [r = 0, g = 0, b = 0] = channels(colour).map((c) => c / 255);
      const linear = (c: number) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
      return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
    };
    const background = (element: ChartElement): string => {
      for (let e: ChartElement | null = element; e; e = e.parentElement) {
        const colour = getComputedStyle(e).backgroundColor;
        if (channels(colour)[3] !== 0 && colour !== 'transparent') return colour;
      }
      return 'rgb(255, 255, 255)';
    };
    const low: string[] = [];
    for (const text of document.querySelectorAll('svg text')) {
      const [a, b] = [luminance(getComputedStyle(text).fill), luminance(background(text))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      if (ratio < 4.5) low.push(`chart text "${text.textContent}" has contrast ${ratio.toFixed(2)}:1`);
    }
    return low;
  });
}

describe('the dashboard has no WCAG A/AA violation (axe-core in Chromium)', () => {
  let browser: Browser;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => browser?.close());

  describe('with token login, on a populated server', () => {
    let f: PopulatedServer;
    let url: string;
    let context: BrowserContext;
    let page: Page;
    beforeAll(async () => {
      f = await populatedServer('sqlite');
      url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
      context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
      page = await context.newPage();
      await page.goto(`${url}/login`);
      await page.fill('input[name="token"]', f.server.tokens.admin);
      await Promise.all([page.waitForURL(`${url}/`), page.click('button[type="submit"]')]);
    }, 60_000);
    afterAll(async () => {
      await context?.close();
      await f?.close();
    });

    it('the login page, and the one a refused token gets', async () => {
      const outside = await browser.newContext({ bypassCSP: true });
      const login = await outside.newPage();
      expect(await violationsAt(login, `${url}/login`)).toEqual([]);
      await login.fill('input[name="token"]', 'tend_not-a-token');
      await login.click('button[type="submit"]');
      await login.waitForSelector('[role="alert"]');
      expect(await violationsAt(login, login.url())).toEqual([]);
      await outside.close();
    });

    it('the list of environments, and an empty search', async () => {
      expect(await violationsAt(page, `${url}/`)).toEqual([]);
      expect(await page.locator('tbody tr').count()).toBeGreaterThanOrEqual(4);
      expect(await violationsAt(page, `${url}/?search=nothing-matches`)).toEqual([]);
    });

    it('an environment page in each state: active, protected, paused, cleaned', async () => {
      for (const [state, id] of Object.entries(f.ids)) {
        expect(await violationsAt(page, `${url}/environments/${id}`), state).toEqual([]);
      }
    });

    it('on a narrow screen (420 px): the list as cards, an environment page, the Cleanup and Savings pages', async () => {
      await page.setViewportSize({ width: 420, height: 900 });
      try {
        expect(await violationsAt(page, `${url}/`)).toEqual([]);
        expect(await violationsAt(page, `${url}/environments/${f.ids.paused}`)).toEqual([]);
        expect(await violationsAt(page, `${url}/cleanup`)).toEqual([]);
        expect(await violationsAt(page, `${url}/savings`)).toEqual([]);
      } finally {
        await page.setViewportSize({ width: 1280, height: 900 });
      }
    });

    it('the Cleanup page, the Savings page and a page that is not found', async () => {
      expect(await violationsAt(page, `${url}/cleanup`)).toEqual([]);
      expect(await violationsAt(page, `${url}/savings`)).toEqual([]);
      expect(await violationsAt(page, `${url}/savings?measure=environmentHours&project=shop`)).toEqual([]);
      expect(await violationsAt(page, `${url}/environments/no-such-environment`)).toEqual([]);
    });
  });

  describe('with sign-in through an OpenID provider', () => {
    let s: TestServer;
    let url: string;
    let dir: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tend-accessibility-'));
      const rolesFile = join(dir, 'roles.yaml');
      writeFileSync(rolesFile, 'roles:\n  - project: "*"\n    role: viewer\n    groups: [everyone]\n');
      s = await createTestServer('sqlite', {
        oidc: {
          // The pages checked here never reach the provider.
          issuer: 'https://login.example.com/realms/platform',
          clientId: 'tend',
          clientSecret: 'accessibility-test-client-secret',
          groupsClaim: 'groups',
          scopes: 'openid email profile',
          roles: new RolesFile(rolesFile),
        },
      });
      url = await s.app.listen({ port: 0, host: '127.0.0.1' });
      s.app.oidc!.listeningAt(url);
    });
    afterAll(async () => {
      await s?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    /** A browser context of a person signed in with `groups` (a session as the callback makes it). */
    async function signedIn(groups: string[]): Promise<{ context: BrowserContext; page: Page }> {
      const { id } = await new PersonSessionRepository(s.database.db).create(
        {
          issuer: 'https://login.example.com/realms/platform',
          subject: `subject-${groups.join('-')}`,
          email: 'ian@example.com',
          name: 'Ian',
          groups,
        },
        sessionTtlMs,
        new Date(),
      );
      const context = await browser.newContext({ bypassCSP: true });
      await context.addCookies([{ name: personSessionCookie, value: s.app.oidc!.sign(id), url }]);
      return { context, page: await context.newPage() };
    }

    it('the login page with the sign-in button, and the "Sign-in failed" page', async () => {
      const context = await browser.newContext({ bypassCSP: true });
      const page = await context.newPage();
      expect(await violationsAt(page, `${url}/login`)).toEqual([]);
      expect(await page.getByText('company account').count()).toBeGreaterThan(0);
      expect(await violationsAt(page, `${url}/auth/callback?code=c&state=s`)).toEqual([]);
      expect(await page.textContent('body')).toMatch(/Sign-in failed/);
      await context.close();
    });

    it('the list as a signed-in person, and the "No access yet" page', async () => {
      const viewer = await signedIn(['everyone']);
      expect(await violationsAt(viewer.page, `${url}/`)).toEqual([]);
      expect(await viewer.page.textContent('body')).toContain('ian@example.com');
      await viewer.context.close();
      const nobody = await signedIn(['interns']);
      expect(await violationsAt(nobody.page, `${url}/`)).toEqual([]);
      expect(await nobody.page.textContent('body')).toMatch(/No access yet/);
      await nobody.context.close();
    });
  });
});
