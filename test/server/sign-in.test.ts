/**
 * Signing in through a real OpenID provider (oidc-provider on 127.0.0.1, scripts/oidc-provider.ts)
 * in a real headless Chromium: a developer signs in, sees the buttons of their role, protects an
 * environment and the audit log names them; a viewer sees no change buttons and is refused a
 * change posted anyway; a person without a role gets the "ask your platform team" page; a role
 * removed from the roles file is gone within a second. And the sign-ins that must fail:
 * wrong state, a replayed code, an expired, forged (another key) or wrongly addressed ID token,
 * an over-long callback query. Screenshots: test-output/sign-in-developer.png,
 * test-output/sign-in-no-role.png.
 */
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RolesFile } from '../../src/server/oidc/roles-file.js';
import { freePort, startTend, waitFor } from '../helpers/project.js';
import { launchChromium } from '../helpers/chromium.js';
import { createTestServer, postEvents, session, type TestServer } from './helpers.js';
import { claimsOf, startTestProvider, type TestProvider } from '../../scripts/oidc-provider.js';

const outputDir = fileURLToPath(new URL('../../test-output/', import.meta.url));

const roles = (developerGroup: string) => `roles:
  - project: shop
    role: developer
    groups: [${developerGroup}]
  - project: "*"
    role: viewer
    groups: [everyone]
  - project: "*"
    role: admin
    emails: [olga@example.com]
`;

describe('sign in through an OpenID provider', () => {
  let dir: string;
  let rolesFile: string;
  let provider: TestProvider;
  let s: TestServer;
  let url: string;
  let browser: Browser;
  let context: BrowserContext;
  let envId: string;
  let rolesInForce: RolesFile;
  /** What the server reported of roles files that changed but do not check. */
  const reloadErrors: Error[] = [];

  /** Writes the roles file as an administrator would: a new file renamed over the old one. */
  const writeRoles = (text: string) => {
    writeFileSync(`${rolesFile}.new`, text);
    renameSync(`${rolesFile}.new`, rolesFile);
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tend-sign-in-'));
    rolesFile = join(dir, 'roles.yaml');
    writeRoles(roles('shop-devs'));
    rolesInForce = new RolesFile(rolesFile);
    rolesInForce.reportReloadError = (error) => reloadErrors.push(error);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    provider = await startTestProvider({
      redirectUri: `${url}/auth/callback`,
      accounts: {
        alice: { email: 'alice@example.com', name: 'Alice', groups: ['shop-devs', 'everyone'] },
        vera: { email: 'vera@example.com', groups: ['everyone'] },
        ian: { email: 'ian@example.com', groups: ['interns'] },
      },
    });
    s = await createTestServer('sqlite', {
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        groupsClaim: 'groups',
        scopes: 'openid email profile',
        publicUrl: url,
        roles: rolesInForce,
      },
    });
    await s.app.listen({ port, host: '127.0.0.1' });
    const a = session({ user: 'alice', command: 'deploy' });
    await postEvents(s, [
      a.started({ afterInactivity: '8h', action: 'delete' }),
      a.ns('ready', { uid: 'u1' }),
    ]);
    const list = await s.app.inject({ url: '/api/v1/environments', headers: s.auth(s.tokens.read) });
    envId = list.json<{ items: { id: string }[] }>().items[0]!.id;
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await s?.close();
    await provider?.close();
    rmSync(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    provider.tamperIdToken = undefined;
    writeRoles(roles('shop-devs'));
    await context?.close();
  });

  /** On the provider's own pages: log in as `login` (any password), consent if asked. */
  const atProvider = async (page: Page, login: string) => {
    await page.waitForURL((u) => u.href.startsWith(provider.issuer));
    await page.fill('input[name=login]', login);
    await page.fill('input[name=password]', 'any password');
    await page.click('button[type=submit]');
    // The provider asks for consent once per person and browser.
    await page.waitForURL(
      (u) => !u.href.startsWith(provider.issuer) || /\/interaction\/[^/]+$/.test(u.pathname),
    );
    if (page.url().startsWith(provider.issuer)) {
      const consent = page.locator('button:has-text("Continue")');
      if ((await consent.count()) > 0) await consent.click();
    }
  };

  const signIn = async (login: string, next = '/'): Promise<Page> => {
    context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${url}/login?next=${encodeURIComponent(next)}`);
    await page.click('#sign-in a');
    await atProvider(page, login);
    await page.waitForURL((u) => u.href.startsWith(url) && !u.pathname.startsWith('/auth/'));
    return page;
  };

  /** Signs in up to the provider's answer, which the provider holds back: the callback URL. */
  const answerOf = async (login: string): Promise<{ callback: URL; page: Page }> => {
    context = await browser.newContext();
    const page = await context.newPage();
    provider.holdAnswers = true;
    try {
      await page.goto(`${url}/login`);
      await page.click('#sign-in a');
      await atProvider(page, login);
      await page.waitForSelector('text=answer held');
    } finally {
      provider.holdAnswers = false;
    }
    return { callback: new URL(provider.heldAnswer!), page };
  };

  it('a developer signs in, sees what their role allows, protects, and the audit log names them', async () => {
    const page = await signIn('alice', `/environments/${envId}`);
    expect(new URL(page.url()).pathname).toBe(`/environments/${envId}`);
    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: join(outputDir, 'sign-in-developer.png'), fullPage: true });
    expect(await page.locator('header').textContent()).toContain(
      'alice@example.com (developer in shop, viewer everywhere)',
    );
    const cookies = await context.cookies(url);
    const personCookie = cookies.find((c) => c.name === 'tend_person_session')!;
    expect(personCookie).toMatchObject({ httpOnly: true, sameSite: 'Lax', secure: false, path: '/' });
    expect(cookies.find((c) => c.name === 'tend_sign_in')).toBeUndefined();
    // The buttons of a developer in shop: protect, keep alive, clean up now.
    expect(await page.locator('button', { hasText: 'Protect' }).count()).toBe(1);
    expect(await page.locator('button', { hasText: 'Keep alive' }).count()).toBe(1);
    expect(await page.locator('button', { hasText: 'Clean up now' }).count()).toBe(1);
    await page.click('button:has-text("Protect")');
    expect(await page.locator('table.facts').textContent()).toContain(
      'yes, by oidc:alice@example.com (subject alice)',
    );
    // Not an admin: the Cleanup page offers no halt switch.
    await page.goto(`${url}/cleanup`);
    expect(await page.locator('button', { hasText: /^\s*Halt/ }).count()).toBe(0);

    const audit = await s.app.inject({ url: '/api/v1/audit', headers: s.auth(s.tokens.admin) });
    const entries = audit.json<{ items: { actor: string; action: string; environmentId: string | null }[] }>()
      .items;
    expect(entries).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          action: 'protect',
          actor: 'oidc:alice@example.com (subject alice)',
          environmentId: envId,
        }),
        expect.objectContaining({ action: 'login', actor: 'oidc:alice@example.com (subject alice)' }),
      ]),
    );
    await s.app.inject({
      method: 'POST',
      url: `/api/v1/environments/${envId}/unprotect`,
      headers: s.auth(s.tokens.admin),
    });

    // Logging out ends the session on the server: the old cookie no longer opens a page.
    await page.goto(`${url}/`);
    await page.click('header button:has-text("Log out")');
    await page.waitForURL(`${url}/login`);
    const replayed = await fetch(`${url}/`, {
      headers: { cookie: `tend_person_session=${personCookie.value}` },
      redirect: 'manual',
    });
    expect(replayed.status).toBe(303);
    expect(replayed.headers.get('location')).toMatch(/^\/login/);
  });

  it('a viewer sees no change buttons, and a change posted anyway is refused', async () => {
    const page = await signIn('vera', `/environments/${envId}`);
    expect(await page.locator('header').textContent()).toContain('vera@example.com (viewer everywhere)');
    expect(await page.locator('button', { hasText: 'Protect' }).count()).toBe(0);
    expect(await page.locator('button', { hasText: 'Keep alive' }).count()).toBe(0);
    expect(await page.locator('button', { hasText: 'Clean up now' }).count()).toBe(0);
    expect(await page.locator('.actions').first().textContent()).toContain(
      'Protecting needs the developer role in this project.',
    );
    const csrf = await page.locator('header input[name=_csrf]').inputValue();
    const cookie = (await context.cookies(url)).find((c) => c.name === 'tend_person_session')!;
    const posted = await fetch(`${url}/environments/${envId}/protect`, {
      method: 'POST',
      headers: {
        cookie: `tend_person_session=${cookie.value}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ _csrf: csrf }),
      redirect: 'manual',
    });
    expect(posted.status).toBe(403);
    expect(await posted.text()).toContain('protect needs the developer role in this project.');
    // Without the CSRF token the form is refused before anything else.
    const noCsrf = await fetch(`${url}/environments/${envId}/keep-alive`, {
      method: 'POST',
      headers: {
        cookie: `tend_person_session=${cookie.value}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ for: '8h' }),
      redirect: 'manual',
    });
    expect(noCsrf.status).toBe(403);
    const env = await s.app.inject({ url: `/api/v1/environments/${envId}`, headers: s.auth(s.tokens.read) });
    expect(
      env.json<{ environment: { protected: boolean; keepAliveUntil: string | null } }>().environment,
    ).toMatchObject({
      protected: false,
      keepAliveUntil: null,
    });
  });

  it('a person with no mapped group gets a page saying whom to ask, not an error', async () => {
    const page = await signIn('ian');
    mkdirSync(outputDir, { recursive: true });
    await page.screenshot({ path: join(outputDir, 'sign-in-no-role.png') });
    expect(await page.locator('header').textContent()).toContain('ian@example.com (no role)');
    expect(await page.locator('#no-role').textContent()).toContain(
      'You are signed in as ian@example.com, but',
    );
    expect(await page.locator('#no-role').textContent()).toContain('Ask your platform team');
    const response = await page.reload();
    expect(response?.status()).toBe(403);
    expect(await page.locator('table#environments').count()).toBe(0);
  });

  it('a role removed from the roles file is gone within a second, and back when restored', async () => {
    const page = await signIn('alice', `/environments/${envId}`);
    expect(await page.locator('button', { hasText: 'Protect' }).count()).toBe(1);
    /** Reloads the page until its header says `header` (the file is looked at once a second). */
    const reloadUntil = (header: string) =>
      waitFor(async () => {
        await page.reload();
        return (await page.locator('header').textContent())?.includes(header);
      }, `the header to say ${header}`);
    writeRoles(roles('someone-else'));
    await reloadUntil('alice@example.com (viewer everywhere)');
    expect(await page.locator('header').textContent()).toContain('alice@example.com (viewer everywhere)');
    expect(await page.locator('button', { hasText: 'Protect' }).count()).toBe(0);
    // A roles file that does not check changes nothing: the roles before stay.
    const reported = reloadErrors.length;
    writeRoles('roles:\n  - project: shop\n    role: owner\n    groups: [shop-devs]\n');
    await waitFor(async () => {
      await page.reload();
      return reloadErrors.length > reported;
    }, 'the server to find the roles file broken');
    expect(reloadErrors.at(-1)?.message).toContain('expected one of: viewer, developer, admin, got "owner"');
    await page.reload();
    expect(await page.locator('header').textContent()).toContain('alice@example.com (viewer everywhere)');
    writeRoles(roles('shop-devs'));
    await reloadUntil('alice@example.com (developer in shop, viewer everywhere)');
    expect(await page.locator('button', { hasText: 'Protect' }).count()).toBe(1);
  });

  /** The reason a "Sign-in failed" page gives. */
  const failure = (page: string) =>
    (/id="sign-in-failed">([^<]*)</.exec(page)?.[1] ?? page.slice(0, 200))
      .replace(/\s+/g, ' ')
      .replaceAll('&quot;', '"')
      .replaceAll('&#39;', "'")
      .replaceAll('&amp;', '&');

  /** Sends the provider's answer to the server the way the browser would, with its sign-in cookie. */
  const deliver = async (callback: URL, signInCookie: string) =>
    fetch(callback, { headers: { cookie: `tend_sign_in=${signInCookie}` }, redirect: 'manual' });

  const signInCookieOf = async () =>
    (await context.cookies(`${url}/auth/callback`)).find((c) => c.name === 'tend_sign_in')!.value;

  it("refuses an answer whose state is not the sign-in's", async () => {
    const { callback } = await answerOf('alice');
    const cookie = await signInCookieOf();
    const forged = new URL(callback);
    forged.searchParams.set('state', 'not-the-state-that-was-sent');
    const res = await deliver(forged, cookie);
    expect(res.status).toBe(401);
    expect(failure(await res.text())).toMatch(/state/);
    expect(res.headers.get('set-cookie') ?? '').not.toContain('tend_person_session=');
  });

  it('refuses a code used before (a replay), and an answer without its sign-in cookie', async () => {
    const { callback } = await answerOf('alice');
    const cookie = await signInCookieOf();
    const first = await deliver(callback, cookie);
    expect(first.status).toBe(303);
    expect(first.headers.get('set-cookie')).toContain('tend_person_session=');
    // The same answer again: the provider refuses the code it already exchanged.
    const again = await deliver(callback, cookie);
    expect(again.status).toBe(401);
    expect(await again.text()).toContain('the identity provider refused the sign-in (invalid_grant');
    // Without the cookie of the sign-in it belongs to: not even sent to the provider.
    const bare = await fetch(callback, { redirect: 'manual' });
    expect(bare.status).toBe(400);
    expect(await bare.text()).toContain('this sign-in expired or was started in another browser');
  });

  it('refuses an expired ID token, one signed by another key, one for another client, and one with another nonce', async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: { tamper: (token: string) => string; expected: RegExp }[] = [
      {
        tamper: (t) => provider.signAsProvider({ ...claimsOf(t), iat: now - 7200, exp: now - 3600 }),
        expected: /"exp" \(expiration time\) claim value, expiration is past/,
      },
      { tamper: (t) => provider.signWithOtherKey(claimsOf(t)), expected: /signature/i },
      {
        tamper: (t) => provider.signAsProvider({ ...claimsOf(t), aud: 'another-client' }),
        expected: /"aud" \(audience\) claim value/,
      },
    ];
    for (const { tamper, expected } of cases) {
      provider.tamperIdToken = tamper;
      const { callback } = await answerOf('alice');
      const res = await deliver(callback, await signInCookieOf());
      const reason = failure(await res.text());
      expect(res.status, reason).toBe(401);
      expect(reason).toMatch(expected);
      await context.close();
    }
    // Each sign-in has its own nonce: the token of an earlier one (its nonce), signed by the
    // provider for this client, is refused in another.
    let earlierNonce: unknown;
    provider.tamperIdToken = (t) => ((earlierNonce = claimsOf(t).nonce), t);
    const earlier = await answerOf('alice');
    expect((await deliver(earlier.callback, await signInCookieOf())).status).toBe(303);
    await context.close();
    provider.tamperIdToken = (t) => provider.signAsProvider({ ...claimsOf(t), nonce: earlierNonce });
    const replayed = await answerOf('alice');
    const refused = await deliver(replayed.callback, await signInCookieOf());
    const reason = failure(await refused.text());
    expect(refused.status, reason).toBe(401);
    expect(reason).toMatch(/"nonce" claim value/);
    await context.close();
    // Untampered, the same sign-in succeeds: the refusals were the tokens'.
    provider.tamperIdToken = undefined;
    const { callback } = await answerOf('alice');
    expect((await deliver(callback, await signInCookieOf())).status).toBe(303);
  });

  it('tend server (the CLI bundle) sends the browser to the provider with PKCE, state and nonce', async () => {
    const port = await freePort();
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, `${provider.clientSecret}\n`);
    const server = startTend([
      'server',
      '--port',
      String(port),
      '--data-dir',
      join(dir, 'data'),
      '--oidc-issuer',
      provider.issuer,
      '--oidc-client-id',
      provider.clientId,
      '--oidc-client-secret-file',
      secretFile,
      '--roles-file',
      rolesFile,
    ]);
    try {
      await server.waitForOutput(/tend server listening/, 'the server to listen');
      const res = await fetch(`http://127.0.0.1:${port}/auth/login?next=/cleanup`, { redirect: 'manual' });
      expect(res.status).toBe(303);
      const location = new URL(res.headers.get('location')!);
      expect(location.origin + location.pathname).toBe(`${provider.issuer}/auth`);
      expect(Object.fromEntries(location.searchParams)).toMatchObject({
        client_id: provider.clientId,
        redirect_uri: `http://127.0.0.1:${port}/auth/callback`,
        response_type: 'code',
        code_challenge_method: 'S256',
        scope: 'openid email profile',
        state: expect.any(String),
        nonce: expect.any(String),
      });
      expect(res.headers.get('set-cookie')).toMatch(/tend_sign_in=.*HttpOnly.*SameSite=Lax/i);
    } finally {
      server.signal('SIGTERM');
      const { code, stdout, stderr } = await server.exited;
      expect(code).toBe(0);
      // The client secret appears nowhere in what the server printed.
      expect(stdout + stderr).not.toContain(provider.clientSecret);
    }
  });

  it('tend server --port 0 without --public-url: the redirect URI is the address it listens on', async () => {
    const secretFile = join(dir, 'client-secret');
    writeFileSync(secretFile, `${provider.clientSecret}\n`);
    const server = startTend([
      'server',
      '--port',
      '0',
      '--data-dir',
      join(dir, 'data-port-0'),
      '--oidc-issuer',
      provider.issuer,
      '--oidc-client-id',
      provider.clientId,
      '--oidc-client-secret-file',
      secretFile,
      '--roles-file',
      rolesFile,
    ]);
    try {
      const output = await server.waitForOutput(
        /tend server listening on (http:\/\/127\.0\.0\.1:\d+)/,
        'the server to listen',
      );
      const listening = /tend server listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(output)![1]!;
      expect(listening).not.toBe('http://127.0.0.1:0');
      const res = await fetch(`${listening}/auth/login`, { redirect: 'manual' });
      expect(res.status).toBe(303);
      expect(new URL(res.headers.get('location')!).searchParams.get('redirect_uri')).toBe(
        `${listening}/auth/callback`,
      );
    } finally {
      server.signal('SIGTERM');
      expect((await server.exited).code).toBe(0);
    }
  });

  it('marks the cookies Secure when the public URL is https', async () => {
    const https = await createTestServer('sqlite', {
      oidc: {
        issuer: provider.issuer,
        clientId: provider.clientId,
        clientSecret: provider.clientSecret,
        groupsClaim: 'groups',
        scopes: 'openid email profile',
        publicUrl: 'https://tend.example.com',
        roles: new RolesFile(rolesFile),
      },
    });
    try {
      const res = await https.app.inject({ url: '/auth/login' });
      expect(res.statusCode).toBe(303);
      expect(new URL(res.headers.location as string).searchParams.get('redirect_uri')).toBe(
        'https://tend.example.com/auth/callback',
      );
      expect(String(res.headers['set-cookie'])).toMatch(
        /^tend_sign_in=[^;]+; Max-Age=600; Path=\/auth\/callback; HttpOnly; Secure; SameSite=Lax$/,
      );
    } finally {
      await https.close();
    }
  });

  it('refuses an over-long or malformed callback query with a page, not a 500', async () => {
    const long = await fetch(`${url}/auth/callback?code=${'a'.repeat(9000)}&state=x`, { redirect: 'manual' });
    expect(long.status).toBe(400);
    expect(await long.text()).toContain('over 8192 characters');
    const unknown = await fetch(`${url}/auth/callback?code=a&state=b&evil=1`, { redirect: 'manual' });
    expect(unknown.status).toBe(400);
    expect(await unknown.text()).toContain('Sign-in failed');
  });
});
