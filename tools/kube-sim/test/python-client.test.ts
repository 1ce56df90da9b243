/**
 * Conformance: the official Python client (Debian's python3-kubernetes, run with /usr/bin/python3)
 * against the simulator. Each scenario is a function of fixtures/python-client.py that prints what
 * the client saw as JSON. The client sends booleans as `True`, stdin as text frames over
 * `v4.channel.k8s.io` only, and reads one WebSocket frame per socket poll: each of those once
 * broke against kube-sim while a real API server worked.
 */
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';

const PYTHON = '/usr/bin/python3';
const FIXTURE = fileURLToPath(new URL('./fixtures/python-client.py', import.meta.url));
const USER_AGENT = 'kube-sim-python-conformance';
const havePythonClient = spawnSync(PYTHON, ['-c', 'import kubernetes']).status === 0;

let sim: KubeSim;
/** Namespaces linger Terminating here until finalized: only `finalize` can complete a deletion. */
let lingering: KubeSim;
let dir: string;

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function python(target: KubeSim, scenario: string, namespace: string): Promise<any> {
  const kubeconfig = join(dir, target === sim ? 'kubeconfig' : 'kubeconfig-lingering');
  return new Promise((resolve, reject) => {
    execFile(
      PYTHON,
      [FIXTURE, kubeconfig, scenario, namespace],
      { env: { ...process.env, HOME: dir }, timeout: 50_000 },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`python scenario ${scenario} failed: ${err.message}\n${stderr}`));
        else resolve(JSON.parse(stdout));
      },
    );
  });
}

describe.skipIf(!havePythonClient)('the official Python client against kube-sim', () => {
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kube-sim-python-'));
    sim = await startKubeSim({ namespaceDeleteDelayMs: 100 });
    lingering = await startKubeSim({ namespaceDeleteDelayMs: 600_000 });
    await sim.writeKubeconfig(join(dir, 'kubeconfig'));
    await lingering.writeKubeconfig(join(dir, 'kubeconfig-lingering'));
  });
  afterAll(async () => {
    await sim?.stop();
    await lingering?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('creates, lists and deletes namespaces; a deleted namespace is Terminating, then gone', async () => {
    const r = await python(sim, 'namespaces', 'py-ns');
    expect(r).toEqual({
      created: 'py-ns',
      phase: 'Active',
      finalizers: ['kubernetes'],
      listed: ['py-ns'],
      afterDeletePhase: 'Terminating',
      gone: 404,
    });
    // The request log saw the client, under its own user agent, touch that namespace.
    const mine = sim.requests.list().filter((q) => q.userAgent === USER_AGENT);
    expect(mine.map((q) => q.verb)).toEqual(expect.arrayContaining(['create', 'list', 'get', 'delete']));
    expect(sim.requests.namespacesTouched()).toContain('py-ns');
  });

  it('finalize with no finalizers removes `kubernetes` and completes a deletion at once', async () => {
    const r = await python(lingering, 'finalize', 'py-fin');
    expect(r).toEqual({
      // An Active namespace loses its finalizers and stays.
      idleFinalizers: null,
      idleStoredFinalizers: null,
      idlePhase: 'Active',
      terminatingPhase: 'Terminating',
      terminatingFinalizers: ['kubernetes'],
      finalizedFinalizers: null,
      namespaceAfter: 404,
      configMapAfter: 404,
    });
    expect(lingering.store.get('namespaces', '', 'py-fin')).toBeUndefined();
    expect(lingering.store.list('configmaps', 'py-fin')).toEqual([]);
  });

  it('watch=True streams ADDED, MODIFIED and DELETED events, not a list', async () => {
    const r = await python(sim, 'watch', 'py-watch');
    expect(r.events).toEqual([
      ['ADDED', 'first'],
      ['ADDED', 'second'],
      ['MODIFIED', 'second'],
      ['DELETED', 'second'],
    ]);
  });

  it('creates pods and reads their status as they run and end', async () => {
    const r = await python(sim, 'pods', 'py-pods');
    expect(r).toMatchObject({
      createdPhase: 'Pending',
      phase: 'Running',
      containerReady: true,
      jobCreated: 'job',
      jobPhase: 'Failed',
      jobExitCode: 3,
      listed: ['job', 'web'],
    });
    expect(r.ready).toEqual(expect.arrayContaining(['Ready', 'ContainersReady', 'PodScheduled']));
  });

  it('logs: follow=True streams lines written later until the container ends; timestamps=True prefixes them', async () => {
    const r = await python(sim, 'logs', 'py-logs');
    expect(r.followed).toEqual(['one', 'two']);
    expect(r.plain).toEqual(['one', 'two']);
    expect(r.stamped).toHaveLength(2);
    r.stamped.forEach((line: string, i: number) => {
      const [time, text] = line.split(' ');
      expect(Number.isNaN(Date.parse(time!))).toBe(false);
      expect(text).toBe(['one', 'two'][i]);
    });
  });

  it('exec over v4.channel.k8s.io: stdout, stderr with the exit code, and stdin echoed line by line', async () => {
    const r = await python(sim, 'exec', 'py-exec');
    expect(r).toEqual({
      stdout: 'hello python\n',
      failingStderr: 'cat: /nope: No such file or directory\n',
      failingCode: 1,
      echoed: ['ping', 'pong'],
    });
  });

  it('merges a Secret’s stringData into base64 data on create, replace and patch, and never returns it', async () => {
    const r = await python(sim, 'secrets', 'py-secrets');
    expect(r).toEqual({
      created: { user: 'ana', password: 's3cret' },
      createdStringData: null,
      read: { user: 'bob', password: 's3cret', token: 't0k' },
      replaced: { user: 'ana', password: 's3cret', token: 't0k' },
      replacedStringData: null,
      patched: { user: 'bob', password: 's3cret', token: 't0k' },
      patchedStringData: null,
      type: 'Opaque',
    });
    expect(sim.store.get('secrets', 'py-secrets', 'creds')).not.toHaveProperty('stringData');
  });

  it('pages with limit and continue, without gaps or repeats; a bad continue token is 400', async () => {
    const r = await python(sim, 'paging', 'py-paging');
    expect(r).toEqual({
      pages: [
        { names: ['cm-0', 'cm-1', 'cm-2'], remaining: 5 },
        { names: ['cm-3', 'cm-4', 'cm-5'], remaining: 2 },
        { names: ['cm-6', 'kube-root-ca.crt'], remaining: null },
      ],
      badContinue: 400,
    });
  });
});
