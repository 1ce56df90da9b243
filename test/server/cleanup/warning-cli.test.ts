/**
 * Every tend command run in an environment inside its warning period prints one line saying
 * when it will be cleaned up and how to postpone it — the real CLI (bin/tend.js, run `npm run
 * build` first) against a listening server. A server that is down or never answers does not fail
 * the command and prints nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { cleanupFixture, type CleanupFixture } from './fixture.js';

const line =
  'tend: this environment will be deleted at 08:00 UTC (in 30m) unless used; `tend keep-alive` to postpone';

describe('the cleanup warning of every command', () => {
  let f: CleanupFixture;
  let url: string;
  let root: string;
  let configDir: string;
  const env = () => ({
    TEND_CONFIG_DIR: configDir,
    TEND_SERVER_URL: url,
    TEND_TOKEN: f.server.tokens.ingest,
  });

  beforeAll(async () => {
    f = await cleanupFixture('sqlite');
    url = await f.server.app.listen({ port: 0, host: '127.0.0.1' });
    configDir = mkdtempSync(join(tmpdir(), 'tend-config-'));
    root = makeProject({
      'tend.yml': [
        'kind: Project',
        'name: shop',
        'environments:',
        '  - name: dev',
        '    defaultNamespace: shop-alice',
        '    cleanup: { afterInactivity: 8h, warnBefore: 1h }',
        'providers:',
        '  - name: exec',
        '',
      ].join('\n'),
      'api.tend.yml': 'kind: Build\ntype: exec\nname: api\nspec:\n  command: [node, -e, "0"]\n',
    });
    const e = await f.environment({ user: 'alice', policyExtra: { warnBefore: '1h' } });
    await f.report('e1', [f.item(e.namespace, 'uid-alice')]);
    f.advance(7.5 * 3_600_000);
    await f.report('e1', [f.item(e.namespace, 'uid-alice')]);
    await f.server.app.cleanup.pass.run();
  }, 60_000);
  afterAll(async () => {
    rmSync(configDir, { recursive: true, force: true });
    removeProjects();
    await f?.close();
  });

  it('tend build prints the line once; tend status shows it in its output', async () => {
    const build = await runTend(['build'], { cwd: root, env: env() });
    expect(build.code, build.stderr).toBe(0);
    expect(build.stderr.split('\n').filter((l) => l.startsWith('tend: this environment'))).toEqual([line]);
    const status = await runTend(['status'], { cwd: root, env: env() });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain('cleanup: will be deleted at 08:00 UTC (in 30m) unless used');
    expect(status.stderr).not.toContain('tend: this environment');
  }, 60_000);

  it('a server that is down, or accepts and never answers, costs nothing and prints nothing', async () => {
    const down = await runTend(['build'], {
      cwd: root,
      env: { ...env(), TEND_SERVER_URL: `http://127.0.0.1:${await freePort()}` },
    });
    expect(down.code, down.stderr).toBe(0);
    expect(down.stderr).not.toContain('tend: this environment');

    const sockets: net.Socket[] = [];
    const silent = net.createServer((s) => sockets.push(s));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const port = (silent.address() as net.AddressInfo).port;
      const hung = await runTend(['build'], {
        cwd: root,
        env: { ...env(), TEND_SERVER_URL: `http://127.0.0.1:${port}` },
      });
      expect(hung.code, hung.stderr).toBe(0);
      expect(hung.stderr).not.toContain('tend: this environment');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => silent.close(() => resolve()));
    }
  }, 60_000);
});
