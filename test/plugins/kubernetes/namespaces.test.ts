import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { cleanupEnvCommand } from '../../../src/commands/cleanup.js';
import { statusCommand } from '../../../src/commands/status.js';
import { lastStamped } from '../../../src/plugins/kubernetes/client/gate.js';
import { removeProjects, runTend, waitFor } from '../../helpers/project.js';
import {
  allEvents,
  execute,
  kubectl,
  kubectlJson,
  namespaceEvents,
  sessionEvents,
  shopProject,
  startSim,
  type SimHandle,
} from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim({ namespaceDeleteDelayMs: 300 });
});
afterAll(async () => h?.stop());
afterEach(removeProjects);

interface NamespaceJson {
  metadata: { uid: string; labels?: Record<string, string>; annotations?: Record<string, string> };
}

describe('the app namespace', () => {
  it('a builds-only session records the app namespace (role app, with its uid); kubectl sees tend’s labels and annotations', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-build-only' });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    const ns = await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-build-only');
    expect(ns.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('tend');
    expect(ns.metadata.annotations).toMatchObject({
      'tend.dev/project': 'shop',
      'tend.dev/environment': 'dev',
    });
    expect(Date.parse(ns.metadata.annotations!['tend.dev/created-at']!)).not.toBeNaN();
    expect(Date.parse(ns.metadata.annotations!['tend.dev/last-activity']!)).not.toBeNaN();

    const recorded = namespaceEvents(sessionEvents(root, result.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-build-only',
    );
    // Created by prepareEnvironment, then observed by the build: a repeat is coalesced, a new cause is not.
    expect(recorded.map((e) => [e.state, e.cause])).toEqual([
      ['missing', 'observed'],
      ['ready', 'created'],
      ['ready', 'observed'],
    ]);
    const created = recorded[1]!;
    expect(created).toMatchObject({
      pluginName: 'kubernetes',
      providerName: 'kubernetes',
      role: 'app',
      namespaceUid: ns.metadata.uid,
      project: 'shop',
      environment: 'dev',
      handler: 'prepareEnvironment',
      target: { kind: 'kubernetes', clusterId: h.sim.clusterId, server: h.sim.url, context: 'kube-sim' },
    });
  });

  it('a second session reports the existing namespace as observed with the same uid', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-again' });
    await execute('build', root);
    const second = await execute('build', root);
    expect(second.data.actions[0]!.state).toBe('cached');
    const uid = (await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-again')).metadata.uid;
    const events = namespaceEvents(sessionEvents(root, second.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-again',
    );
    expect(events.map((e) => [e.state, e.cause, e.namespaceUid])).toEqual([['ready', 'observed', uid]]);
  });

  it('stamps tend.dev/last-activity at most once a minute per namespace, across processes', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-stamp' });
    await execute('build', root);
    const stampPatches = (since: number) =>
      h.sim.requests
        .list({ since })
        .filter((r) => r.method === 'PATCH' && r.resource === 'namespaces' && r.namespace === 'ns-stamp');
    const stamp = async () =>
      (await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-stamp')).metadata.annotations![
        'tend.dev/last-activity'
      ]!;
    // Another process: nothing in memory says when it stamped; the namespace as read does.
    lastStamped.clear();
    let mark = h.sim.requests.latest();
    await execute('build', root);
    expect(stampPatches(mark)).toEqual([]);

    const twoMinutesAgo = new Date(Date.now() - 120_000).toISOString();
    await kubectl(
      h.kubeconfig,
      'annotate',
      '--overwrite',
      'namespace',
      'ns-stamp',
      `tend.dev/last-activity=${twoMinutesAgo}`,
    );
    lastStamped.clear();
    mark = h.sim.requests.latest();
    await execute('build', root);
    expect(stampPatches(mark)).toHaveLength(1);
    expect(Date.parse(await stamp())).toBeGreaterThan(Date.parse(twoMinutesAgo));
  });

  it('provider preparation records the namespace even when an action then fails to resolve', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'ns-unresolved',
      files: {
        'other/other.tend.yml': `kind: Run
type: kubernetes-pod
name: broken
spec: { image: "\${actions.build.api.outputs.nope}" }
`,
      },
    });
    const result = await execute('run', root, ['broken']).catch((e: unknown) => e);
    const events = allEvents(root);
    const app = namespaceEvents(events).filter((e) => e.namespaceName === 'ns-unresolved');
    expect(app.some((e) => e.state === 'ready' && e.role === 'app' && e.namespaceUid)).toBe(true);
    // The run itself failed (unresolvable output), after the namespace was recorded.
    const failedRun = 'data' in (result as object) ? (result as { exitCode: number }).exitCode : 1;
    expect(failedRun).not.toBe(0);
  });

  it('read-only paths (tend status) never create the namespace; they report it missing', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-status-only' });
    const status = await statusCommand({ root });
    expect(status.data.providers.find((p) => p.name === 'kubernetes')?.ready).toBe(false);
    await expect(kubectl(h.kubeconfig, 'get', 'namespace', 'ns-status-only')).rejects.toThrow(
      /NotFound|not found/,
    );
    const events = namespaceEvents(sessionEvents(root, status.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-status-only',
    );
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.state === 'missing' && e.cause === 'observed' && e.role === 'app')).toBe(
      true,
    );
    expect(h.sim.store.get('namespaces', '', 'ns-status-only')).toBeUndefined();
  });

  it('adopts a namespace that existed before (tend.dev/adopted=true) and never deletes it', async () => {
    await kubectl(h.kubeconfig, 'create', 'namespace', 'ns-preexisting');
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-preexisting' });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    const ns = await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-preexisting');
    expect(ns.metadata.annotations?.['tend.dev/adopted']).toBe('true');
    expect(ns.metadata.labels?.['app.kubernetes.io/managed-by']).toBeUndefined();
    const recorded = namespaceEvents(sessionEvents(root, result.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-preexisting',
    );
    expect(recorded.every((e) => e.namespaceUid === ns.metadata.uid && e.role === 'app')).toBe(true);
    // The next session reports the adoption as part of the ownership detail.
    const status = await statusCommand({ root });
    const observed = namespaceEvents(sessionEvents(root, status.data.sessionId)).find(
      (e) => e.namespaceName === 'ns-preexisting',
    );
    expect(observed?.detail).toMatchObject({ adopted: true, managedBy: null });

    const cleanup = await cleanupEnvCommand({ root });
    const k8s = cleanup.data.providers.find((p) => p.name === 'kubernetes')!;
    expect(k8s.deleted).toBe(false);
    expect(k8s.message).toMatch(/left alone: it existed before tend used it \(adopted\)/);
    await kubectl(h.kubeconfig, 'get', 'namespace', 'ns-preexisting');
  });

  it('leaves a namespace of another project alone', async () => {
    const other = shopProject({ registry: h.sim.registryHost, namespace: 'ns-shared', project: 'other' });
    await execute('build', other);
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-shared' });
    const cleanup = await cleanupEnvCommand({ root });
    expect(cleanup.data.providers[0]!.deleted).toBe(false);
    expect(cleanup.data.providers[0]!.message).toMatch(/left alone/);
    await kubectl(h.kubeconfig, 'get', 'namespace', 'ns-shared');
  });

  it('cleanup deletes a namespace tend owns, waits until it is gone and reports it missing (deleted)', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-cleanup' });
    await execute('build', root);
    const uid = (await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-cleanup')).metadata
      .uid;
    const cleanup = await cleanupEnvCommand({ root });
    expect(cleanup.data.providers[0]).toMatchObject({
      deleted: true,
      message: 'deleted namespace ns-cleanup',
    });
    // Gone when the command returns, not some time later.
    expect(h.sim.store.get('namespaces', '', 'ns-cleanup')).toBeUndefined();
    const events = namespaceEvents(sessionEvents(root, cleanup.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-cleanup',
    );
    expect(events.map((e) => [e.state, e.cause, e.namespaceUid])).toEqual([
      ['ready', 'observed', uid],
      ['terminating', 'deleted', uid],
      ['missing', 'deleted', uid],
    ]);
  });

  it('creating into a terminating namespace waits until it is gone, then re-creates it (new uid)', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'ns-terminating' });
    await execute('build', root);
    const before = (await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-terminating'))
      .metadata.uid;
    // A finalizer holds the namespace terminating until the build has seen it so, however slow.
    const hold = (finalizers: string[] | null) =>
      kubectl(
        h.kubeconfig,
        'patch',
        'namespace',
        'ns-terminating',
        '--type=merge',
        '-p',
        JSON.stringify({ metadata: { finalizers } }),
      );
    await hold(['tend.test/hold']);
    await kubectl(h.kubeconfig, 'delete', 'namespace', 'ns-terminating', '--wait=false');
    await waitFor(
      () => h.sim.store.get('namespaces', '', 'ns-terminating')?.status?.phase === 'Terminating',
      'the namespace to be terminating',
    );
    writeFileSync(path.join(root, 'api', 'main.js'), 'console.log("v2")\n');
    const running = execute('build', root);
    await waitFor(
      () =>
        namespaceEvents(allEvents(root)).some(
          (e) => e.namespaceName === 'ns-terminating' && e.state === 'terminating',
        ),
      'the build to see the namespace terminating',
    );
    await hold(null);
    const result = await running;
    expect(result.exitCode).toBe(0);
    const after = (await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'ns-terminating'))
      .metadata.uid;
    expect(after).not.toBe(before);
    const events = namespaceEvents(sessionEvents(root, result.data.sessionId)).filter(
      (e) => e.namespaceName === 'ns-terminating',
    );
    expect(events.map((e) => [e.state, e.cause, e.namespaceUid])).toEqual([
      ['terminating', 'observed', before],
      ['missing', 'observed', undefined],
      ['ready', 'created', after],
      ['ready', 'observed', after],
    ]);
  });
});

describe('system namespaces', () => {
  it('kaniko builds run in the system namespace, which is only ever reported with role system', async () => {
    const root = shopProject({
      registry: h.sim.registryHost,
      namespace: 'ns-kaniko-sys',
      buildMode: 'kaniko',
    });
    const result = await execute('build', root);
    expect(result.exitCode).toBe(0);
    const events = namespaceEvents(allEvents(root));
    const system = events.filter(
      (e) => e.namespaceName === 'tend-system' || e.namespaceName === 'kube-system',
    );
    expect(system.some((e) => e.namespaceName === 'tend-system')).toBe(true);
    expect(system.every((e) => e.role === 'system')).toBe(true);
    expect(events.filter((e) => e.role === 'app').every((e) => e.namespaceName === 'ns-kaniko-sys')).toBe(
      true,
    );
    const ns = await kubectlJson<NamespaceJson>(h.kubeconfig, 'get', 'namespace', 'tend-system');
    expect(ns.metadata.annotations?.['tend.dev/role']).toBe('system');
    expect(ns.metadata.annotations?.['tend.dev/project']).toBeUndefined();
  });

  it('refuses an app namespace that is the system namespace or a Kubernetes one', async () => {
    const root = shopProject({ registry: h.sim.registryHost, namespace: 'kube-system' });
    await expect(execute('build', root)).rejects.toMatchObject({ code: 'TEND_CONFIG_INVALID' });
  });
});

describe('two projects, one namespace', () => {
  it('a second project naming the first one’s namespace is refused (exit 2, the owner named); the first project’s annotations stay and its cleanup still works', async () => {
    const first = shopProject({
      registry: h.sim.registryHost,
      namespace: 'ns-two-projects',
      project: 'shop',
    });
    const deployed = await runTend(['deploy'], { cwd: first, env: { KUBECONFIG: h.kubeconfig } });
    expect(deployed.code, deployed.stderr).toBe(0);
    const before = h.sim.store.get('namespaces', '', 'ns-two-projects')!.metadata;

    const second = shopProject({
      registry: h.sim.registryHost,
      namespace: 'ns-two-projects',
      project: 'billing',
    });
    for (const command of [['build'], ['deploy'], ['status']]) {
      const run = await runTend(command, { cwd: second, env: { KUBECONFIG: h.kubeconfig } });
      expect(run.code, `${command.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stderr).toMatch(/namespace "ns-two-projects" belongs to project "shop"/);
      expect(run.stderr).toMatch(/another defaultNamespace/);
    }
    // Its cleanup deletes nothing and says whose namespace it is.
    const refused = await runTend(['cleanup', 'env'], { cwd: second, env: { KUBECONFIG: h.kubeconfig } });
    expect(refused.code, refused.stderr).toBe(0);
    expect(refused.stdout).toMatch(/namespace ns-two-projects left alone: it belongs to project "shop"/);
    const json = await runTend(['build', '--json'], { cwd: second, env: { KUBECONFIG: h.kubeconfig } });
    expect(JSON.parse(json.stdout).error).toMatchObject({
      code: 'TEND_K8S_NAMESPACE_OTHER_PROJECT',
      detail: { namespace: 'ns-two-projects', owner: 'shop', project: 'billing' },
    });
    // Nothing of the first project was rewritten, stamped or marked adopted; its deploy still runs.
    const after = h.sim.store.get('namespaces', '', 'ns-two-projects')!.metadata;
    expect(after.annotations).toEqual(before.annotations);
    expect(after.labels).toEqual(before.labels);
    expect(after.resourceVersion).toBe(before.resourceVersion);
    expect(h.sim.store.get('deployments', 'ns-two-projects', 'api')).toBeDefined();
    // The second project recorded what it saw, refused, as part of its environment.
    const seen = namespaceEvents(allEvents(second)).filter((e) => e.namespaceName === 'ns-two-projects');
    expect(seen.every((e) => e.project === 'billing' && e.role === 'app')).toBe(true);
    expect(seen.filter((e) => e.detail?.refused === 'other-project').length).toBeGreaterThanOrEqual(3);

    const cleanup = await runTend(['cleanup', 'env', '--json'], {
      cwd: first,
      env: { KUBECONFIG: h.kubeconfig },
    });
    expect(cleanup.code, cleanup.stderr).toBe(0);
    const k8s = (
      JSON.parse(cleanup.stdout) as { providers: { name: string; deleted: boolean }[] }
    ).providers.find((p) => p.name === 'kubernetes');
    expect(k8s?.deleted).toBe(true);
    expect(h.sim.store.get('namespaces', '', 'ns-two-projects')).toBeUndefined();
  });
});
