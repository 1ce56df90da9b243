/**
 * The cleanup commands of the CLI against a listening server: `tend cleanup plan|enforce|halt|
 * unhalt|breaker reset`, `tend keep-alive` and the cleanup line of `tend status`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  breakerResetCommand,
  cleanupEnforceCommand,
  cleanupHaltCommand,
  cleanupPlanCommand,
  keepAliveCommand,
} from '../../../src/commands/cleanup-server.js';
import { cleanupLine, cleanupWarning } from '../../../src/remote/cleanup-plan.js';
import { statusCommand } from '../../../src/commands/status.js';
import type { TendError } from '../../../src/errors.js';
import type { PlanItemView } from '../../../src/api/cleanup.js';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { cleanupFixture, type CleanupFixture } from './fixture.js';

const hour = 3_600_000;

describe('cleanup commands', () => {
  let f: CleanupFixture;
  let url: string;
  let root: string;
  let configDir: string;
  const saved = { ...process.env };
  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
    configDir = mkdtempSync(join(tmpdir(), 'tend-config-'));
    process.env.TEND_CONFIG_DIR = configDir;
    process.env.TEND_SERVER_URL = url;
    process.env.TEND_TOKEN = f.server.tokens.admin;
    root = makeProject({
      'tend.yml': [
        'kind: Project',
        'name: shop',
        'defaultEnvironment: dev',
        'environments:',
        '  - name: dev',
        '    defaultNamespace: shop-alice',
        '    cleanup: { afterInactivity: 8h, action: delete }',
        'providers:',
        '  - name: exec',
        '',
      ].join('\n'),
    });
  });
  afterAll(async () => {
    process.env = { ...saved };
    rmSync(configDir, { recursive: true, force: true });
    removeProjects();
    await f.close();
  });

  it('plan, enforce, halt, unhalt and breaker reset talk to the server', async () => {
    const env = await f.environment({ user: 'alice' });
    await f.report('e1', [f.item(env.namespace, 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
    const plan = await cleanupPlanCommand({ within: '24h' });
    // Not enforced yet: what it would do, never "will".
    expect(plan.data.items).toMatchObject([{ kind: 'dry-run', namespace: 'shop-alice' }]);
    expect(plan.human).toMatch(/^DECISION\s+WHEN\s+PROJECT/);
    expect(plan.human).toContain(
      'would be deleted at 08:00 UTC once enforced (`tend cleanup enforce --project shop`)',
    );

    const enforced = await cleanupEnforceCommand({ project: 'shop' });
    expect(enforced.data.enforced).toEqual([
      { project: 'shop', environment: 'dev', afterInactivity: '8h', action: 'delete' },
    ]);
    expect(enforced.human).toBe('Enforced shop/dev: delete after 8h of inactivity.');
    const unknown = (await cleanupEnforceCommand({ project: 'nope' }).catch((e: unknown) => e)) as TendError;
    expect(unknown.code).toBe('TEND_CLEANUP_CONFLICT');
    await f.server.app.cleanup.pass.run();
    const scheduled = await cleanupPlanCommand({ within: '24h' });
    expect(scheduled.data.items).toMatchObject([{ kind: 'scheduled', namespace: 'shop-alice' }]);
    expect(scheduled.human).toContain('deleted at 08:00 UTC unless used');

    expect((await cleanupHaltCommand(true, {})).human).toMatch(/^Cleanup halted/);
    expect((await cleanupHaltCommand(true, {})).human).toBe('Cleanup was already halted.');
    expect((await cleanupPlanCommand({})).human).toMatch(/^Cleanup is HALTED/);
    expect((await cleanupHaltCommand(false, {})).human).toBe(
      'Cleanup unhalted: automatic cleanup plans and runs again.',
    );

    const notOpen = (await breakerResetCommand({ project: 'shop' }).catch((e: unknown) => e)) as TendError;
    expect(notOpen.code).toBe('TEND_CLEANUP_CONFLICT');
    const read = (await cleanupHaltCommand(true, { token: f.server.tokens.read }).catch(
      (e: unknown) => e,
    )) as TendError;
    expect(read.code).toBe('TEND_AUTH_FORBIDDEN');
  });

  it('tend cleanup unhalt lifts the halt; tend cleanup resume still does, with a deprecation line', async () => {
    const env = { TEND_CONFIG_DIR: configDir, TEND_SERVER_URL: url, TEND_TOKEN: f.server.tokens.admin };
    const halt = await runTend(['cleanup', 'halt'], { env });
    expect(halt.stdout).toBe('Cleanup halted: nothing is planned or started until `tend cleanup unhalt`.\n');
    const unhalt = await runTend(['cleanup', 'unhalt'], { env });
    expect([unhalt.code, unhalt.stdout, unhalt.stderr]).toEqual([
      0,
      'Cleanup unhalted: automatic cleanup plans and runs again.\n',
      '',
    ]);
    expect((await runTend(['cleanup', 'halt'], { env })).code).toBe(0);
    const resume = await runTend(['cleanup', 'resume'], { env });
    expect(resume.code).toBe(0);
    expect(resume.stdout).toBe('Cleanup unhalted: automatic cleanup plans and runs again.\n');
    expect(resume.stderr).toBe(
      'warning: `tend cleanup resume` is deprecated: it is `tend cleanup unhalt` (`tend resume` resumes a paused environment)\n',
    );
    // The help lists halt and unhalt, not the old name.
    const help = await runTend(['cleanup', '--help']);
    expect(help.stdout).toMatch(/^ {2}unhalt /m);
    expect(help.stdout).not.toMatch(/^ {2}resume /m);
  });

  it('keep-alive postpones cleanup of the current environment; status shows the plan', async () => {
    const kept = await keepAliveCommand({ root, for: '2d' });
    expect(kept.data.environment.keepAliveUntil).toBe(new Date(f.now().getTime() + 48 * hour).toISOString());
    expect(kept.human).toMatch(/^Kept shop\/dev \(shop-alice\) alive until/);
    await f.server.app.cleanup.pass.run();
    // Kept alive past its due time: blocked, not "deleted in 8h".
    const status = await statusCommand({ root });
    expect(status.human).toContain(
      'cleanup: not cleaned (kept-alive): not cleaned while kept alive until 2026-03-31 00:00 UTC; due at 08:00 UTC otherwise',
    );
    expect(status.data.cleanup).toMatchObject({
      namespace: 'shop-alice',
      kind: 'blocked',
      reason: 'kept-alive',
    });
  });

  it('cleanupLine says what will happen in a sentence', () => {
    const now = new Date('2026-03-29T10:00:00Z');
    const item = (over: Partial<PlanItemView>): PlanItemView => ({
      kind: 'scheduled',
      reason: null,
      action: 'delete',
      environmentId: 'e',
      project: 'shop',
      environment: 'dev',
      namespace: 'shop-a',
      resourceId: 'r',
      targetKey: 'kubernetes/c',
      pluginName: 'kubernetes',
      dueAt: '2026-03-29T13:12:00.000Z',
      lastActivityAt: '2026-03-29T05:12:00.000Z',
      sentence: 'no activity since 05:12 UTC, policy 8h; last: tend build by alice',
      jobId: null,
      decidedAt: '2026-03-29T10:00:00.000Z',
      warnAt: '2026-03-29T12:12:00.000Z',
      warning: false,
      ...over,
    });
    expect(cleanupLine([item({})], false, now)).toBe(
      'cleanup: deleted in 3h 12m unless used; `tend keep-alive` to postpone',
    );
    expect(
      cleanupLine(
        [
          item({
            kind: 'blocked',
            reason: 'protected',
            sentence: 'never cleaned: the environment is protected',
          }),
        ],
        false,
        now,
      ),
    ).toBe('cleanup: not cleaned (protected): never cleaned: the environment is protected');
    expect(cleanupLine([], false, now)).toMatch(/no policy applies/);
    // Inside warnBefore: "will be deleted at …", and the line every command prints.
    const warned = item({ warning: true, dueAt: '2026-03-29T10:42:00.000Z' });
    expect(cleanupLine([warned], false, now)).toBe(
      'cleanup: will be deleted at 10:42 UTC (in 42m) unless used; `tend keep-alive` to postpone',
    );
    expect(cleanupWarning([warned], now)).toBe(
      'tend: this environment will be deleted at 10:42 UTC (in 42m) unless used; `tend keep-alive` to postpone',
    );
    expect(cleanupWarning([item({})], now)).toBeUndefined();
  });
});

describe('tend server token create --scope agent --cluster', () => {
  it('binds an agent token to clusters, and refuses --cluster on other scopes', async () => {
    const { migrateCommand } = await import('../../../src/server/cli.js');
    const { tokenCreateCommand } = await import('../../../src/server/admin-cli.js');
    const dir = mkdtempSync(join(tmpdir(), 'tend-token-'));
    try {
      await migrateCommand({ dataDir: dir });
      const created = await tokenCreateCommand({
        dataDir: dir,
        name: 'agent-eu',
        scope: 'agent',
        cluster: ['c1', 'c2'],
      });
      expect(created.data).toMatchObject({ scope: 'agent', clusters: ['c1', 'c2'] });
      expect(created.human).toContain('clusters c1, c2');
      const err = (await tokenCreateCommand({
        dataDir: dir,
        name: 'x',
        scope: 'read',
        cluster: ['c1'],
      }).catch((e: unknown) => e)) as TendError;
      expect(err.code).toBe('TEND_USAGE');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("binds an agent token to another plugin's targets with --target, and refuses what is not <kind>/<id>", async () => {
    const { migrateCommand } = await import('../../../src/server/cli.js');
    const { tokenCreateCommand } = await import('../../../src/server/admin-cli.js');
    const dir = mkdtempSync(join(tmpdir(), 'tend-token-'));
    try {
      await migrateCommand({ dataDir: dir });
      const created = await tokenCreateCommand({
        dataDir: dir,
        name: 'agent-dirs',
        scope: 'agent',
        target: ['dirs/root-1'],
      });
      expect(created.data).toMatchObject({ scope: 'agent', clusters: null, targets: ['dirs/root-1'] });
      expect(created.human).toContain('targets dirs/root-1');
      for (const [scope, target, message] of [
        ['read', 'dirs/root-1', /--target binds an agent token to targets/],
        ['agent', 'dirs', /--target must be an executor target, <kind>\/<id>.*got "dirs"/],
        ['agent', 'dirs/a/b', /got "dirs\/a\/b"/],
      ] as const) {
        const err = (await tokenCreateCommand({ dataDir: dir, name: 'x', scope, target: [target] }).catch(
          (e: unknown) => e,
        )) as TendError;
        expect(err.code, target).toBe('TEND_USAGE');
        expect(err.message).toMatch(message);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
