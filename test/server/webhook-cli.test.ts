/**
 * `tend server webhook add|list|remove` on the server's database (SQLite in a data directory):
 * the secret is printed once and never listed; bad URLs and events are usage errors (exit 2)
 * and store nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { githubSecretOf, migrateCommand } from '../../src/server/cli.js';
import { webhookAddCommand, webhookListCommand, webhookRemoveCommand } from '../../src/server/admin-cli.js';
import type { TendError } from '../../src/errors.js';
import { runTend } from '../helpers/project.js';

const dataDir = mkdtempSync(join(tmpdir(), 'tend-webhooks-'));
beforeAll(async () => {
  // Like `tend server token`, the webhook commands need the server's database to exist.
  await migrateCommand({ dataDir });
});
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

describe('tend server webhook', () => {
  it('adds (secret shown once), lists (never the secret) and removes', async () => {
    const added = await webhookAddCommand({
      dataDir,
      url: 'https://hooks.example.com/tend',
      event: ['cleanup.warning', 'cleanup.done'],
      format: 'slack',
      project: 'shop',
    });
    expect(added.data).toMatchObject({
      events: ['cleanup.warning', 'cleanup.done'],
      format: 'slack',
      project: 'shop',
    });
    expect(added.data.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(added.human).toContain(added.data.secret);

    const list = await webhookListCommand({ dataDir });
    expect(list.data).toMatchObject([
      {
        id: added.data.id,
        url: 'https://hooks.example.com/tend',
        deliveries: { pending: 0, delivered: 0, failed: 0 },
      },
    ]);
    expect(JSON.stringify(list.data)).not.toContain(added.data.secret);
    expect(list.human).not.toContain(added.data.secret);
    expect(list.human).toMatch(/^ID\s+URL\s+EVENTS/);

    expect((await webhookRemoveCommand(added.data.id, { dataDir })).human).toMatch(/^Removed webhook wh_/);
    expect((await webhookListCommand({ dataDir })).data).toEqual([]);
    const again = (await webhookRemoveCommand(added.data.id, { dataDir }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(again.code).toBe('TEND_WEBHOOK_NOT_FOUND');
    expect(again.exitCode).toBe(2);
  });

  it('refuses bad URLs and events with exit 2, storing nothing', async () => {
    for (const args of [
      ['--url', 'ftp://example.com/x', '--event', 'cleanup.done'],
      ['--url', 'file:///etc/passwd', '--event', 'cleanup.done'],
      ['--url', 'https://example.com/x', '--event', 'cleanup.nope'],
      ['--url', 'https://example.com/x', '--event', 'cleanup.done', '--format', 'xml'],
    ]) {
      const run = await runTend(['server', 'webhook', 'add', '--data-dir', dataDir, ...args]);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toMatch(/TEND_USAGE|--url|--event|--format/);
    }
    const listed = await runTend(['server', 'webhook', 'list', '--data-dir', dataDir, '--json']);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toEqual([]);
  }, 60_000);

  it('tend server reads the GitHub secret from its file or TEND_GITHUB_WEBHOOK_SECRET; bad ones are usage errors', () => {
    const file = join(dataDir, 'github-secret');
    writeFileSync(file, 'a-secret-of-enough-length\n');
    expect(githubSecretOf({ githubWebhookSecretFile: file })).toBe('a-secret-of-enough-length');
    const saved = process.env.TEND_GITHUB_WEBHOOK_SECRET;
    try {
      process.env.TEND_GITHUB_WEBHOOK_SECRET = 'from-the-environment-0001';
      expect(githubSecretOf({})).toBe('from-the-environment-0001');
      delete process.env.TEND_GITHUB_WEBHOOK_SECRET;
      expect(githubSecretOf({})).toBeUndefined();
    } finally {
      if (saved === undefined) delete process.env.TEND_GITHUB_WEBHOOK_SECRET;
      else process.env.TEND_GITHUB_WEBHOOK_SECRET = saved;
    }
    writeFileSync(file, 'short');
    const codeOf = (f: () => unknown) => {
      try {
        f();
      } catch (e) {
        return (e as TendError).code;
      }
      return undefined;
    };
    expect(codeOf(() => githubSecretOf({ githubWebhookSecretFile: file }))).toBe('TEND_USAGE');
    expect(codeOf(() => githubSecretOf({ githubWebhookSecretFile: join(dataDir, 'missing') }))).toBe(
      'TEND_USAGE',
    );
    expect(() => githubSecretOf({ githubWebhookSecretFile: join(dataDir, 'missing') })).toThrow(
      `--github-webhook-secret-file: cannot read ${join(dataDir, 'missing')}: ENOENT`,
    );
  });
});
