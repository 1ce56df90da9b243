/**
 * `tend agent --local` end to end: an exec environment deployed with the real CLI (events
 * streamed to the server) is cleaned by the agent of its host once its policy is enforced and it
 * went idle — its persistent process stopped, its directory removed — through the same machinery
 * as a cluster's namespaces.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAlive, listDeployStates } from '../../src/plugins/exec/deploy.js';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';
import { createTestServer, type TestServer } from '../server/helpers.js';
import { streamEnv } from '../stream/helpers.js';
import { testClock } from '../cleanup/helpers.js';

let server: TestServer;
let url: string;
let stateDir: string;
const clock = testClock();

beforeAll(async () => {
  server = await createTestServer('sqlite', { now: clock.now });
  url = await server.app.listen({ port: 0, host: '127.0.0.1' });
  stateDir = mkdtempSync(path.join(os.tmpdir(), 'tend-state-'));
});
afterAll(async () => {
  await server.close();
  rmSync(stateDir, { recursive: true, force: true });
  removeProjects();
});

describe('tend agent --local', () => {
  it('cleans an idle exec environment of its host', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: localclean
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: localclean-dev
    cleanup: { afterInactivity: 1h, action: delete }
providers:
  - name: exec
---
kind: Deploy
type: exec
name: web
spec:
  command: [sleep, '300']
  persistent: true
`,
    });
    const env = streamEnv(url, server.tokens.ingest, { TEND_STATE_DIR: stateDir });
    const deployed = await runTend(['deploy'], { cwd: root, env });
    expect(deployed.code, deployed.stderr).toBe(0);
    const dir = path.join(root, '.tend', 'envs', 'localclean-dev');
    const [web] = listDeployStates(dir);
    expect(isAlive(web!)).toBe(true);
    expect(JSON.parse(readFileSync(path.join(dir, 'environment.json'), 'utf8'))).toMatchObject({
      project: 'localclean',
    });

    await server.app.cleanup.switches.enforce('localclean', undefined, 'test');
    clock.advance(2 * 3_600_000);
    const agent = () =>
      runTend(['agent', '--server', url, '--token', server.tokens.agent, '--local', '--once', '--json'], {
        env: { TEND_STATE_DIR: stateDir },
      });
    const first = await agent();
    expect(first.code, first.stderr).toBe(0);
    const listed = (
      JSON.parse(first.stdout) as { last: { inventories: { targetKey: string; items: number }[] } }
    ).last.inventories;
    expect(listed).toEqual([
      expect.objectContaining({ targetKey: expect.stringMatching(/^local\//), items: 1 }),
    ]);
    expect((await server.app.cleanup.pass.run())?.planned).toBe(1);
    const second = await agent();
    expect(second.code, second.stderr).toBe(0);
    const jobs = (JSON.parse(second.stdout) as { last: { jobs: { outcome: string; message: string }[] } })
      .last.jobs;
    expect(jobs).toEqual([
      expect.objectContaining({ outcome: 'done', message: expect.stringMatching(/stopped 1/) }),
    ]);
    expect(existsSync(dir)).toBe(false);
    expect(isAlive(web!)).toBe(false);
  });
});
