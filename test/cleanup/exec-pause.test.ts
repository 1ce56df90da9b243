/**
 * Pause and resume of a local (exec) environment: the executors' pause job stops its persistent
 * processes and keeps their state; `tend resume` starts them again; a pause followed by
 * `tend deploy` resumes first and says so.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { resumeCommand } from '../../src/commands/resume.js';
import { isAlive, listDeployStates } from '../../src/plugins/exec/deploy.js';
import { execPlugin } from '../../src/plugins/exec/index.js';
import { localIdentity } from '../../src/state/identity.js';
import { makeProject, removeProjects } from '../helpers/project.js';
import { callContext } from './helpers.js';
import { useTempStateDir } from '../helpers/state-dir.js';

const cleanup = execPlugin.cleanup!;
const hostId = localIdentity().hostId;
useTempStateDir();
afterEach(removeProjects);

async function deployed(name: string) {
  const root = makeProject({
    'tend.yml': `kind: Project
name: ${name}
defaultEnvironment: dev
environments:
  - name: dev
    defaultNamespace: ${name}-dev
providers:
  - name: exec
---
kind: Deploy
type: exec
name: web
spec:
  command: [sh, -c, 'echo "started with $GREETING"; exec sleep 300']
  env: { GREETING: hello }
  persistent: true
`,
  });
  expect((await executeCommand('deploy', [], { root })).exitCode).toBe(0);
  const dir = path.join(root, '.tend', 'envs', `${name}-dev`);
  const record = JSON.parse(readFileSync(path.join(dir, 'environment.json'), 'utf8')) as { uid: string };
  return { root, dir, uid: record.uid };
}

async function pause(env: { dir: string; uid: string }, name: string) {
  const { ctx } = callContext({}, { pluginName: 'exec', hostId });
  const [target] = await cleanup.targets(ctx);
  return cleanup.verifyAndClean(ctx, target!, {
    id: 'j1',
    action: 'pause',
    project: name,
    environment: 'dev',
    namespaceName: `${name}-dev`,
    namespaceUid: env.uid,
    expectedLastActivityAt: '2026-01-01T00:00:00.000Z',
    target: { kind: 'local', hostId, path: env.dir },
    dryRun: false,
  });
}

describe('exec pause and resume', () => {
  it('pause stops the processes and keeps their state; tend resume starts them again as they were', async () => {
    const env = await deployed('lp1');
    const [running] = listDeployStates(env.dir);
    expect(isAlive(running!)).toBe(true);

    expect(await pause(env, 'lp1')).toEqual({
      outcome: 'done',
      message: `paused environment ${env.dir}: stopped 1 process(es), state kept`,
    });
    const [paused] = listDeployStates(env.dir);
    expect(isAlive(running!)).toBe(false);
    expect(paused).toMatchObject({ name: 'web', pausedAt: expect.any(String), command: running!.command });
    // Pausing again stops nothing.
    expect((await pause(env, 'lp1')).message).toMatch(/stopped 0 process/);

    const result = await resumeCommand({ root: env.root });
    expect(result.data).toMatchObject({
      resumed: true,
      providers: [{ provider: 'exec', resumed: true, message: 'started the paused process(es) web again' }],
    });
    const [resumed] = listDeployStates(env.dir);
    expect(resumed!.pausedAt).toBeUndefined();
    expect(isAlive(resumed!)).toBe(true);
    expect(resumed!.pid).not.toBe(running!.pid);
    // Started exactly as before: same command, same environment.
    expect(readFileSync(resumed!.logFile, 'utf8').match(/started with hello/g)).toHaveLength(2);

    const nothing = await resumeCommand({ root: env.root });
    expect(nothing.data.resumed).toBe(false);
    expect(nothing.human).toMatch(/is not paused/);
  });

  it('tend deploy in a paused environment resumes it first and says so', async () => {
    const env = await deployed('lp2');
    await pause(env, 'lp2');
    const result = await executeCommand('deploy', [], { root: env.root });
    expect(result.exitCode).toBe(0);
    expect(result.data.resumed).toEqual(['started the paused process(es) web again']);
    const [state] = listDeployStates(env.dir);
    expect(isAlive(state!)).toBe(true);
    expect(state!.pausedAt).toBeUndefined();
  });
});
