/**
 * `npm run sso-sandbox` as a user runs it: it starts the local OpenID provider and prints a
 * `tend server` command; that command, run as printed, starts a server whose "Sign in with your
 * company account" goes to the sandbox, and the admin and the viewer sign in there in a real
 * Chromium and come back signed in with their roles. Ctrl-C (SIGINT) stops the sandbox and
 * removes the files it wrote.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchChromium } from '../helpers/chromium.js';
import { freePort, repoRoot, startTend, waitFor, type RunningTend } from '../helpers/project.js';

let sandbox: ChildProcess | undefined;
let sandboxExited: Promise<number | null> | undefined;
let sandboxRunning = false;
let server: RunningTend | undefined;
let browser: Browser | undefined;

beforeAll(() => {
  if (!existsSync(`${repoRoot}/dist/cli/tend.cjs`)) {
    throw new Error('run `npm run build` first: this test runs the built CLI');
  }
});
afterAll(async () => {
  await browser?.close();
  if (server) {
    server.signal('SIGTERM');
    await server.exited;
  }
  // npm, tsx and the script are one process group, the one this test started: Ctrl-C it, so that
  // the sandbox removes its files.
  if (sandboxRunning && sandbox?.pid !== undefined) {
    process.kill(-sandbox.pid, 'SIGINT');
    await sandboxExited;
  }
});

/** The command the sandbox printed: the words after `tend`, lines joined at their `\`. */
function printedCommand(output: string): string[] {
  const block = /\n {2}(tend server(?:[^\\\n]|\\\n)*)\n/.exec(output)?.[1];
  if (!block) throw new Error(`no tend server command in:\n${output}`);
  return block.replace(/\\\n/g, ' ').split(/\s+/).filter(Boolean).slice(1);
}

/** On the sandbox's login page: sign in as `login` (any password), consent if asked. */
async function atProvider(page: Page, issuer: string, login: string): Promise<void> {
  await page.waitForURL((u) => u.href.startsWith(issuer));
  await page.fill('input[name=login]', login);
  await page.fill('input[name=password]', 'whatever');
  await page.click('button[type=submit]');
  await page.waitForURL((u) => !u.href.startsWith(issuer) || /\/interaction\/[^/]+$/.test(u.pathname));
  if (page.url().startsWith(issuer)) {
    const consent = page.locator('button:has-text("Continue")');
    if ((await consent.count()) > 0) await consent.click();
  }
}

it('the printed tend server command signs the admin and the viewer in through the sandbox', async () => {
  const tendPort = await freePort();
  sandbox = spawn('npm', ['run', 'sso-sandbox', '--', '--port', '0', '--tend-port', String(tendPort)], {
    cwd: repoRoot,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  sandboxRunning = true;
  sandboxExited = new Promise((resolve) =>
    sandbox!.once('close', (code) => {
      sandboxRunning = false;
      resolve(code);
    }),
  );
  let output = '';
  sandbox.stdout!.on('data', (d) => (output += d));
  sandbox.stderr!.on('data', (d) => (output += d));
  await waitFor(() => /Ctrl-C stops the sandbox/.test(output), 'the sandbox to print its command', 60_000);

  const args = printedCommand(output);
  const flag = (name: string) => args[args.indexOf(name) + 1]!;
  expect(args[0]).toBe('server');
  expect(flag('--public-url')).toBe(`http://127.0.0.1:${tendPort}`);
  const issuer = flag('--oidc-issuer');
  expect(issuer).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  // The provider answers its discovery as tend will ask it.
  const discovery = (await (await fetch(`${issuer}/.well-known/openid-configuration`)).json()) as {
    issuer: string;
  };
  expect(discovery.issuer).toBe(issuer);
  const secretFile = flag('--oidc-client-secret-file');
  expect(readFileSync(secretFile, 'utf8').trim().length).toBeGreaterThanOrEqual(16);

  server = startTend(args);
  await server.waitForOutput(/tend server listening/, 'the server to listen');
  const url = flag('--public-url');
  // The server sends the browser to the sandbox.
  const redirect = await fetch(`${url}/auth/login`, { redirect: 'manual' });
  expect(redirect.headers.get('location')).toMatch(new RegExp(`^${issuer}/auth\\?`));

  browser = await launchChromium();
  const headers: Record<string, string> = {};
  for (const login of ['admin', 'viewer']) {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${url}/login`);
    await page.click('#sign-in a');
    await atProvider(page, issuer, login);
    await page.waitForURL((u) => u.href.startsWith(url) && !u.pathname.startsWith('/auth/'));
    headers[login] = (await page.locator('header').textContent()) ?? '';
    await context.close();
  }
  expect(headers.admin).toContain('admin@example.com (admin everywhere)');
  expect(headers.viewer).toContain('viewer@example.com (viewer everywhere)');

  const stopped = server;
  server = undefined;
  stopped.signal('SIGTERM');
  expect((await stopped.exited).code).toBe(0);
  // Ctrl-C: the sandbox stops and removes the directory it made.
  process.kill(-sandbox.pid!, 'SIGINT');
  await sandboxExited;
  expect(existsSync(secretFile)).toBe(false);
}, 120_000);

it('a port that is not a port number is a usage error (exit 2) naming the flag, nothing started', async () => {
  for (const [args, message] of [
    [['--port', 'abc'], /--port must be a port number \(0-65535\), got abc/],
    [['--tend-port', '0'], /--tend-port must name a port/],
    [['--nope'], /Unknown option '--nope'/],
  ] as const) {
    const child = spawn('npm', ['run', '--silent', 'sso-sandbox', '--', ...args], {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
    expect(code, stderr).toBe(2);
    expect(stderr).toMatch(message);
    expect(stderr).toMatch(/usage: npm run sso-sandbox/);
  }
}, 60_000);
