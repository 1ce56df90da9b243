/**
 * The dashboard shows warnings and webhook deliveries: an environment inside its warning period
 * is marked "warning" with "will be deleted at …" in the list and on its page; the Cleanup page
 * lists deliveries with their status (delivered, pending with its retry and the receiver's
 * answer), names escaped.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects } from './helpers.js';
import { postLogin } from './helpers.js';
import { cleanupFixture, type CleanupFixture } from './cleanup/fixture.js';

describe.each(dialects)('dashboard warnings and deliveries on %s', (dialect) => {
  let f: CleanupFixture;
  let env: { id: string; namespace: string };
  let receiver: Server;
  let base: string;

  const login = async (token: string) => {
    const res = await postLogin(f.server.app, { token, next: '/' });
    return `tend_session=${res.cookies.find((c) => c.name === 'tend_session')!.value}`;
  };
  const page = async (url: string) =>
    f.server.app.inject({ method: 'GET', url, headers: { cookie: await login(f.server.tokens.developer) } });

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(req.url?.startsWith('/ok') ? 204 : 500).end());
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
    f = await cleanupFixture(dialect);
    env = await f.environment({ user: 'alice' });
    await f.call('POST', '/api/v1/cleanup/enforce', { project: 'shop' });
    await f.server.app.notifications.addWebhook({ url: `${base}/ok`, events: ['cleanup.warning'] }, 'test');
    await f.server.app.notifications.addWebhook(
      { url: `${base}/fails?<script>alert(1)</script>`, events: ['cleanup.warning'] },
      'test',
    );
    f.advance(7.5 * 3_600_000);
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    await f.server.app.notifications.pass();
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    await new Promise<void>((resolve) => receiver?.close(() => resolve()));
  });

  it('marks the environment "warning": will be deleted at …', async () => {
    const list = await page('/');
    const row = new RegExp(`data-environment-id="${env.id}"[\\s\\S]*?</tr>`).exec(list.body)![0];
    expect(row).toContain('>warning</span');
    expect(row).toContain('will be deleted at 08:00 UTC unless used (&#96;tend keep-alive&#96; to postpone)');
    const detail = await page(`/environments/${env.id}`);
    expect(detail.body).toContain('>warning</span');
    expect(detail.body).toContain('Keep alive');
  });

  it('lists deliveries with their status on the Cleanup page, escaped', async () => {
    const res = await page('/cleanup');
    expect(res.statusCode).toBe(200);
    const table = /<table id="cleanup-deliveries"[\s\S]*?<\/table>/.exec(res.body)![0];
    expect(table).toContain('badge delivery-delivered');
    expect(table).toContain('badge delivery-pending');
    expect(table).toContain('retry');
    expect(table).toContain('500');
    expect(table).toContain('the receiver answered 500');
    expect(table).not.toContain('<script>');
    expect(table).toContain('cleanup.warning');
    // Each delivery names its environment, not only the project.
    expect(table).toMatch(new RegExp(`href="/environments/${env.id}"\\s*>shop/dev</a`));
  });
});
