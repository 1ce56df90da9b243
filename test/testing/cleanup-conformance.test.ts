/**
 * The cleanup conformance kit (`tend/testing`, src/testing/cleanup-conformance.ts): the built-in
 * kubernetes plugin (against kube-sim), the built-in exec plugin (local environments) and the
 * examples/plugin-dirs plugin conform; three deliberately broken variants of the dirs plugin each
 * fail the one check their bug breaks.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  checkCleanupConformance,
  CleanupConformanceError,
  runCleanupConformance,
  type CleanupConformanceReport,
} from '../../src/testing/index.js';
import { CoreV1Api, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';
import { copyExample, makeProject, removeProjects, repoRoot } from '../helpers/project.js';
import { useTempStateDir } from '../helpers/state-dir.js';

useTempStateDir();
afterAll(removeProjects);

const allChecks = [
  'targets',
  'inventory',
  'read',
  'preconditions',
  'dry-run',
  'protection',
  'hostile-jobs',
  'pause-resume',
  'archive',
  'restore',
  'delete',
];

/** The sentence of one check. */
const sentence = (report: CleanupConformanceReport, check: string) =>
  report.checks.find((c) => c.check === check)!.sentence;

/** Each check's status, by name. */
const statuses = (report: CleanupConformanceReport) =>
  Object.fromEntries(report.checks.map((c) => [c.check, c.status]));

/** A merge patch of the namespace's labels, through @kubernetes/client-node: its resourceVersion changes. */
async function labelNamespace(kubeconfig: string, name: string): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  await kc
    .makeApiClient(CoreV1Api)
    .patchNamespace(
      { name, body: { metadata: { labels: { 'example.com/touched': String(Date.now()) } } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );
}

describe('the cleanup conformance kit, on the built-in plugins', () => {
  let handle: SimHandle;
  beforeAll(async () => {
    handle = await startSim();
  });
  afterAll(() => handle.stop());

  it('passes the kubernetes plugin against kube-sim: every check applies, none fails', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: kconf
environments:
  - { name: dev, defaultNamespace: kconf-dev }
  - { name: review, defaultNamespace: kconf-review }
  - { name: adopt, defaultNamespace: kconf-adopt }
providers: [{ name: kubernetes, context: kube-sim }]
`,
    });
    const report = await checkCleanupConformance({
      root,
      plugin: 'kubernetes',
      settings: { kubeconfig: handle.kubeconfig, contexts: ['kube-sim'] },
      kubeconfig: handle.kubeconfig,
      protection: { patterns: ['kconf-prod-*'] },
      // A label edited by someone else: a new resourceVersion, for the stale-version preconditions.
      changeResource: ({ name }) => labelNamespace(handle.kubeconfig, name),
      // A namespace someone made before tend used it: adopted by prepareEnvironment.
      adopted: {
        environment: 'adopt',
        create: async (name) => void handle.sim.store.create('namespaces', '', { metadata: { name } }),
      },
    });
    expect(report.failures).toEqual([]);
    expect(report.targetKey).toBe(`kubernetes/${handle.sim.clusterId}`);
    expect(report.checks.map((c) => c.check)).toEqual(allChecks);
    expect(new Set(Object.values(statuses(report)))).toEqual(new Set(['pass']));
    expect(sentence(report, 'preconditions')).toBe(
      'delete, pause, resume with another uid and with a stale version answer changed and leave the resource as it was',
    );
    expect(sentence(report, 'hostile-jobs')).toMatch(
      /a claim of creation before the target created it, .*activity after the plan's, an adopted resource are cancelled/,
    );
    expect(sentence(report, 'protection')).toMatch(/kconf-prod-x, kconf-review \(protected\)/);
    // The kit tidies up: what it created is gone from the cluster.
    for (const name of ['kconf-dev', 'kconf-review']) {
      expect(handle.sim.store.get('namespaces', '', name)).toBeUndefined();
    }
    expect(handle.sim.store.get('namespaces', '', 'kconf-adopt')).toBeDefined();
  });
});

describe('the cleanup conformance kit, on local environments', () => {
  it('passes the exec plugin (tend agent --local): no restore primitive is not applicable', async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: xconf
environments:
  - { name: dev, defaultNamespace: xconf-dev }
  - { name: review, defaultNamespace: xconf-review }
providers: [{ name: exec }]
`,
    });
    const report = await checkCleanupConformance({ root, plugin: 'exec', flags: { local: true } });
    expect(report.failures).toEqual([]);
    expect(statuses(report)).toEqual({
      ...Object.fromEntries(allChecks.map((c) => [c, 'pass'])),
      restore: 'not-applicable',
    });
    // Its version is its uid: no stale one exists, and it says so.
    expect(sentence(report, 'preconditions')).toMatch(/no stale version could be made/);
    expect(sentence(report, 'restore')).toBe('the plugin has no restore primitive');
  });
});

describe('the cleanup conformance kit, on a dirs root', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'tend-conformance-root-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('passes examples/plugin-dirs: no pause or resume primitive is not applicable, never a failure', async () => {
    const project = copyExample('plugin-dirs', { dependencies: true });
    const report = await checkCleanupConformance({
      root: project,
      plugin: 'dirs',
      vars: [`root=${root}`],
      settings: { root },
      protection: { patterns: ['notes-prod-*'] },
    });
    expect(report.failures).toEqual([]);
    expect(report.checks.map((c) => c.check)).toEqual(allChecks);
    expect(statuses(report)).toEqual({
      ...Object.fromEntries(allChecks.map((c) => [c, 'pass'])),
      'pause-resume': 'not-applicable',
    });
    expect(sentence(report, 'pause-resume')).toBe('the plugin has no pause or resume primitive');
    expect(sentence(report, 'protection')).toMatch(/notes-prod-x/);
    expect(sentence(report, 'preconditions')).toMatch(
      /with another uid and with a stale version answer changed/,
    );
  });

  /** A project of the dirs example's shape whose provider is the broken variant `fixture`. */
  const brokenProject = (fixture: string) =>
    makeProject({
      'tend.yml': `kind: Project
name: broken
environments:
  - { name: dev, defaultNamespace: broken-dev }
  - { name: review, defaultNamespace: broken-review }
providers:
  - name: dirs
    plugin: ${path.join(repoRoot, 'test/fixtures/plugins', fixture)}
    root: ${root}
`,
    });

  it.each([
    [
      'dirs-unchecked-delete.js',
      'preconditions',
      /^preconditions: delete of broken-dev with another uid \(.*-other\) answered done: .*, not changed; delete with another uid removed broken-dev/,
    ],
    [
      'dirs-first-page.js',
      'inventory',
      /^inventory: inventory\(\) does not list broken-review \(environment review, uid .*\), yet the inventory says it is complete$/,
    ],
    [
      'dirs-cached-read.js',
      'delete',
      /^delete: read\(\) of broken-review after its deletion returned uid .*, not undefined$/,
    ],
  ])('fails %s on its %s check alone, naming it', async (fixture, check, failure) => {
    const options = { root: brokenProject(fixture), plugin: 'dirs', settings: { root } };
    const error = await checkCleanupConformance(options).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CleanupConformanceError);
    const { report } = error as CleanupConformanceError;
    expect(report.failures).toEqual([expect.stringMatching(failure)]);
    expect(statuses(report)[check]).toBe('fail');
    expect((error as Error).message).toContain(`  - ${check}: `);
    // runCleanupConformance returns the same verdict without throwing.
    rmSync(root, { recursive: true, force: true });
    const again = await runCleanupConformance(options);
    expect(again.failures).toEqual([expect.stringMatching(failure)]);
  });
});
