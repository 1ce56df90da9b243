/** Wire-level behaviour: auth, Status errors, selectors, pagination, patches, deletes, watch. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { KubeSim } from '../src/index.js';
import { startKubeSim } from '../src/index.js';
import { call, deployment, ns, pod, waitFor } from './helpers.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim({ namespaceDeleteDelayMs: 300 });
  await call(sim, 'POST', '/api/v1/namespaces', ns('t'));
});
afterAll(async () => {
  await sim?.stop();
});

const cm = (
  name: string,
  labels: Record<string, string> = {},
  data: Record<string, string> = {},
): Record<string, unknown> => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, labels },
  data,
});

describe('authentication and discovery', () => {
  it('answers 401 Status without the bearer token', async () => {
    for (const token of [null, 'wrong']) {
      const r = await call(sim, 'GET', '/api/v1/namespaces', undefined, { token });
      expect(r.status).toBe(401);
      expect(r.json).toMatchObject({ kind: 'Status', status: 'Failure', reason: 'Unauthorized', code: 401 });
    }
  });

  it('serves /version, /api, /apis and the group-version resource lists', async () => {
    expect((await call(sim, 'GET', '/version')).json.gitVersion).toMatch(/^v1\.32/);
    expect((await call(sim, 'GET', '/api')).json.versions).toEqual(['v1']);
    const groups = (await call(sim, 'GET', '/apis')).json.groups.map((g: { name: string }) => g.name);
    expect(groups).toEqual([
      'apps',
      'batch',
      'autoscaling',
      'networking.k8s.io',
      'rbac.authorization.k8s.io',
      'admissionregistration.k8s.io',
    ]);
    const core = (await call(sim, 'GET', '/api/v1')).json.resources.map((r: { name: string }) => r.name);
    expect(core).toEqual(
      expect.arrayContaining([
        'namespaces',
        'pods',
        'pods/log',
        'pods/exec',
        'pods/attach',
        'services',
        'configmaps',
        'secrets',
        'serviceaccounts',
        'events',
      ]),
    );
    const appsRes = (await call(sim, 'GET', '/apis/apps/v1')).json.resources.map(
      (r: { name: string }) => r.name,
    );
    expect(appsRes).toEqual(expect.arrayContaining(['deployments', 'replicasets', 'statefulsets']));
    expect((await call(sim, 'GET', '/apis/batch/v1')).json.resources[0].name).toBe('jobs');
  });

  it('answers aggregated discovery requests with the legacy documents so clients fall back', async () => {
    const r = await call(sim, 'GET', '/apis', undefined, {
      accept: 'application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json',
    });
    expect(r.headers['content-type']).toBe('application/json');
    expect(r.json.kind).toBe('APIGroupList');
  });

  it('returns 404 NotFound Status for unknown paths', async () => {
    const r = await call(sim, 'GET', '/apis/example.com/v1/widgets');
    expect(r.status).toBe(404);
    expect(r.json.reason).toBe('NotFound');
  });
});

describe('object metadata and Status errors', () => {
  it('assigns uid, resourceVersion from a global counter, creationTimestamp and generation', async () => {
    const a = (await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('meta-a'))).json;
    const d = (await call(sim, 'POST', '/apis/apps/v1/namespaces/t/deployments', deployment('meta-d'))).json;
    expect(a.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(d.metadata.resourceVersion)).toBeGreaterThan(Number(a.metadata.resourceVersion));
    expect(a.metadata.creationTimestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(d.metadata.generation).toBe(1);
    const gen = await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', {
      metadata: { generateName: 'gen-' },
    });
    expect(gen.json.metadata.name).toMatch(/^gen-[a-z0-9]{5}$/);
  });

  it('404 NotFound for a missing object and for a missing namespace', async () => {
    const r = await call(sim, 'GET', '/api/v1/namespaces/t/configmaps/nope');
    expect(r.status).toBe(404);
    expect(r.json).toMatchObject({
      reason: 'NotFound',
      message: 'configmaps "nope" not found',
      details: { name: 'nope', kind: 'configmaps' },
    });
    const d = await call(sim, 'GET', '/apis/apps/v1/namespaces/t/deployments/nope');
    expect(d.json.message).toBe('deployments.apps "nope" not found');
    const inMissing = await call(sim, 'POST', '/api/v1/namespaces/ghost/configmaps', cm('x'));
    expect(inMissing.status).toBe(404);
    expect(inMissing.json.message).toBe('namespaces "ghost" not found');
  });

  it('409 AlreadyExists on a duplicate create', async () => {
    await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('dup'));
    const r = await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('dup'));
    expect(r.status).toBe(409);
    expect(r.json).toMatchObject({ reason: 'AlreadyExists', message: 'configmaps "dup" already exists' });
  });

  it('409 Conflict on an update with a stale resourceVersion', async () => {
    const v1 = (await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('cas', {}, { n: '1' }))).json;
    const v2 = await call(sim, 'PUT', '/api/v1/namespaces/t/configmaps/cas', { ...v1, data: { n: '2' } });
    expect(v2.status).toBe(200);
    const stale = await call(sim, 'PUT', '/api/v1/namespaces/t/configmaps/cas', { ...v1, data: { n: '3' } });
    expect(stale.status).toBe(409);
    expect(stale.json.reason).toBe('Conflict');
    expect(stale.json.message).toContain('the object has been modified');
  });

  it('422 Invalid for names that are not DNS-1123', async () => {
    const bad = await call(sim, 'POST', '/api/v1/namespaces', ns('Bad_Name'));
    expect(bad.status).toBe(422);
    expect(bad.json.reason).toBe('Invalid');
    expect(bad.json.message).toContain(
      'Namespace "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": a lowercase RFC 1123 label',
    );
    expect(bad.json.details.causes[0]).toMatchObject({ reason: 'FieldValueInvalid', field: 'metadata.name' });
    const long = await call(sim, 'POST', '/api/v1/namespaces', ns('a'.repeat(64)));
    expect(long.status).toBe(422);
    const cmBad = await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('under_score'));
    expect(cmBad.status).toBe(422);
    expect(cmBad.json.message).toContain('RFC 1123 subdomain');
    const dotted = await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('dotted.name'));
    expect(dotted.status).toBe(201);
  });

  it('422 Invalid for a container list given as text (a JSON string from a template): refused, the simulator keeps serving', async () => {
    const deployment = {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'env-as-text' },
      spec: {
        selector: { matchLabels: { app: 'e' } },
        template: {
          metadata: { labels: { app: 'e' } },
          spec: { containers: [{ name: 'c', image: 'busybox', env: '[{"name":"A","value":"1"}]' }] },
        },
      },
    };
    const bad = await call(sim, 'POST', '/apis/apps/v1/namespaces/t/deployments', deployment);
    expect(bad.status).toBe(422);
    expect(bad.json.details.causes[0]).toMatchObject({ field: 'spec.template.spec.containers[0].env' });
    const listed = await call(sim, 'GET', '/apis/apps/v1/namespaces/t/deployments');
    expect(listed.status).toBe(200);
    expect(listed.json.items.map((d: { metadata: { name: string } }) => d.metadata.name)).not.toContain(
      'env-as-text',
    );
  });

  it('403 Forbidden when creating in a terminating namespace, then the namespace is gone', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('doomed'));
    await call(sim, 'POST', '/api/v1/namespaces/doomed/configmaps', cm('inside'));
    const del = await call(sim, 'DELETE', '/api/v1/namespaces/doomed');
    expect(del.json.status.phase).toBe('Terminating');
    const r = await call(sim, 'POST', '/api/v1/namespaces/doomed/configmaps', cm('late'));
    expect(r.status).toBe(403);
    expect(r.json.reason).toBe('Forbidden');
    expect(r.json.message).toBe(
      'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated',
    );
    await waitFor(
      async () => (await call(sim, 'GET', '/api/v1/namespaces/doomed')).status === 404,
      'namespace removal',
    );
    expect(sim.store.get('configmaps', 'doomed', 'inside')).toBeUndefined();
  });

  it('refuses to delete the system namespaces', async () => {
    const r = await call(sim, 'DELETE', '/api/v1/namespaces/kube-system');
    expect(r.status).toBe(403);
  });
});

describe('lists', () => {
  beforeAll(async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('sel'));
    const specs: [string, Record<string, string>][] = [
      ['a', { tier: 'web', env: 'prod' }],
      ['b', { tier: 'web', env: 'dev' }],
      ['c', { tier: 'db', env: 'prod' }],
      ['d', { tier: 'cache' }],
      ['e', {}],
    ];
    for (const [name, labels] of specs)
      await call(sim, 'POST', '/api/v1/namespaces/sel/configmaps', cm(name, labels));
  });
  const names = async (query: string): Promise<string[]> =>
    (await call(sim, 'GET', `/api/v1/namespaces/sel/configmaps?${query}`)).json.items
      .map((i: { metadata: { name: string } }) => i.metadata.name)
      .filter((n: string) => n !== 'kube-root-ca.crt');

  it.each([
    ['tier=web', ['a', 'b']],
    ['tier==web', ['a', 'b']],
    ['tier!=web', ['c', 'd', 'e']],
    ['tier in (web,db)', ['a', 'b', 'c']],
    ['tier notin (web,db)', ['d', 'e']],
    ['env', ['a', 'b', 'c']],
    ['!env', ['d', 'e']],
    ['tier=web,env=prod', ['a']],
  ])('labelSelector %s', async (sel, expected) => {
    expect(await names(`labelSelector=${encodeURIComponent(sel)}`)).toEqual(expected);
  });

  it('fieldSelector metadata.name and metadata.namespace', async () => {
    expect(await names('fieldSelector=metadata.name%3Dc')).toEqual(['c']);
    expect(await names('fieldSelector=metadata.name!%3Dc&labelSelector=tier')).toEqual(['a', 'b', 'd']);
    const all = await call(
      sim,
      'GET',
      '/api/v1/configmaps?fieldSelector=metadata.namespace%3Dsel,metadata.name%3Da',
    );
    expect(all.json.items.map((i: { metadata: { namespace: string } }) => i.metadata.namespace)).toEqual([
      'sel',
    ]);
  });

  it('paginates with limit and continue across all namespaces, without gaps or repeats', async () => {
    for (let i = 0; i < 25; i++)
      await call(sim, 'POST', '/api/v1/namespaces', ns(`page-${String(i).padStart(2, '0')}`));
    const seen: string[] = [];
    let token = '';
    let pages = 0;
    do {
      const r = await call(
        sim,
        'GET',
        `/api/v1/namespaces?limit=7${token ? `&continue=${encodeURIComponent(token)}` : ''}`,
      );
      expect(r.json.kind).toBe('NamespaceList');
      expect(r.json.items.length).toBeLessThanOrEqual(7);
      seen.push(...r.json.items.map((i: { metadata: { name: string } }) => i.metadata.name));
      token = r.json.metadata.continue ?? '';
      if (token) expect(r.json.metadata.remainingItemCount).toBeGreaterThan(0);
      pages++;
    } while (token);
    const all = (await call(sim, 'GET', '/api/v1/namespaces')).json.items.map(
      (i: { metadata: { name: string } }) => i.metadata.name,
    );
    expect(seen).toEqual(all);
    expect(pages).toBe(Math.ceil(all.length / 7));
    expect(new Set(seen).size).toBe(seen.length);
    // As an API server: with a selector, how many remain is unknown, and not announced.
    for (const selector of [
      'labelSelector=kubernetes.io%2Fmetadata.name',
      'fieldSelector=status.phase%3DActive',
    ]) {
      const selected = await call(sim, 'GET', `/api/v1/namespaces?limit=2&${selector}`);
      expect(selected.json.metadata.continue).toBeTruthy();
      expect(selected.json.metadata).not.toHaveProperty('remainingItemCount');
    }
    const badToken = await call(sim, 'GET', '/api/v1/namespaces?limit=2&continue=not-a-token');
    expect(badToken.status).toBe(400);
  });

  it('serves Table output when asked', async () => {
    const r = await call(sim, 'GET', '/api/v1/namespaces/sel/configmaps', undefined, {
      accept: 'application/json;as=Table;v=v1;g=meta.k8s.io',
    });
    expect(r.json.kind).toBe('Table');
    expect(r.json.columnDefinitions[0].name).toBe('Name');
    expect(r.json.rows.length).toBeGreaterThan(0);
  });
});

describe('patch, update and delete', () => {
  it('applies JSON merge, strategic merge and JSON patches', async () => {
    await call(sim, 'POST', '/apis/apps/v1/namespaces/t/deployments', {
      ...deployment('p'),
      spec: {
        replicas: 1,
        selector: { matchLabels: { app: 'p' } },
        template: {
          metadata: { labels: { app: 'p' } },
          spec: {
            containers: [
              { name: 'app', image: 'a:1', env: [{ name: 'X', value: '1' }] },
              { name: 'side', image: 's:1' },
            ],
          },
        },
      },
    });
    const path = '/apis/apps/v1/namespaces/t/deployments/p';
    const merge = await call(
      sim,
      'PATCH',
      path,
      { metadata: { labels: { m: '1' } } },
      { contentType: 'application/merge-patch+json' },
    );
    expect(merge.json.metadata.labels).toEqual({ m: '1' });
    const smp = await call(
      sim,
      'PATCH',
      path,
      {
        spec: {
          template: {
            spec: { containers: [{ name: 'app', image: 'a:2', env: [{ name: 'Y', value: '2' }] }] },
          },
        },
      },
      { contentType: 'application/strategic-merge-patch+json' },
    );
    const containers = smp.json.spec.template.spec.containers;
    expect(containers.map((c: { name: string; image: string }) => `${c.name}=${c.image}`)).toEqual([
      'app=a:2',
      'side=s:1',
    ]);
    expect(containers[0].env).toEqual([
      { name: 'X', value: '1' },
      { name: 'Y', value: '2' },
    ]);
    expect(smp.json.metadata.generation).toBe(2);
    const del = await call(
      sim,
      'PATCH',
      path,
      { spec: { template: { spec: { containers: [{ name: 'side', $patch: 'delete' }] } } } },
      { contentType: 'application/strategic-merge-patch+json' },
    );
    expect(del.json.spec.template.spec.containers).toHaveLength(1);
    const jp = await call(
      sim,
      'PATCH',
      path,
      [
        { op: 'test', path: '/spec/replicas', value: 1 },
        { op: 'replace', path: '/spec/replicas', value: 4 },
        { op: 'add', path: '/metadata/annotations', value: { j: 'p' } },
      ],
      { contentType: 'application/json-patch+json' },
    );
    expect(jp.json.spec.replicas).toBe(4);
    expect(jp.json.metadata.annotations).toEqual({ j: 'p' });
    const failedTest = await call(sim, 'PATCH', path, [{ op: 'test', path: '/spec/replicas', value: 9 }], {
      contentType: 'application/json-patch+json',
    });
    expect(failedTest.status).toBe(422);
    const missing = await call(
      sim,
      'PATCH',
      '/api/v1/namespaces/t/configmaps/none',
      {},
      { contentType: 'application/merge-patch+json' },
    );
    expect(missing.status).toBe(404);
  });

  it('server-side apply creates when missing and merges when present', async () => {
    const yaml = `apiVersion: v1
kind: ConfigMap
metadata:
  name: applied
  labels: {a: "1"}
data:
  k: v
`;
    const path = '/api/v1/namespaces/t/configmaps/applied?fieldManager=tend';
    const created = await call(sim, 'PATCH', path, yaml, { contentType: 'application/apply-patch+yaml' });
    expect(created.status).toBe(201);
    expect(created.json.data).toEqual({ k: 'v' });
    expect(created.json.metadata.managedFields[0]).toMatchObject({ manager: 'tend', operation: 'Apply' });
    const updated = await call(sim, 'PATCH', path, yaml.replace('k: v', 'k: w'), {
      contentType: 'application/apply-patch+yaml',
    });
    expect(updated.status).toBe(200);
    expect(updated.json.data).toEqual({ k: 'w' });
    const noManager = await call(sim, 'PATCH', '/api/v1/namespaces/t/configmaps/applied', yaml, {
      contentType: 'application/apply-patch+yaml',
    });
    expect(noManager.status).toBe(400);
  });

  it('DELETE honours uid and resourceVersion preconditions', async () => {
    const c = (await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', cm('pre'))).json;
    const wrongUid = await call(sim, 'DELETE', '/api/v1/namespaces/t/configmaps/pre', {
      kind: 'DeleteOptions',
      apiVersion: 'v1',
      preconditions: { uid: 'other' },
    });
    expect(wrongUid.status).toBe(409);
    expect(wrongUid.json.message).toContain('Precondition failed: UID in precondition: other');
    const wrongRv = await call(sim, 'DELETE', '/api/v1/namespaces/t/configmaps/pre', {
      preconditions: { resourceVersion: '1' },
    });
    expect(wrongRv.status).toBe(409);
    const ok = await call(sim, 'DELETE', '/api/v1/namespaces/t/configmaps/pre', {
      preconditions: { uid: c.metadata.uid, resourceVersion: c.metadata.resourceVersion },
    });
    expect(ok.status).toBe(200);
    expect((await call(sim, 'GET', '/api/v1/namespaces/t/configmaps/pre')).status).toBe(404);
  });

  it('DELETE propagates to dependents: Background deletes them, Orphan keeps them', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('gc'));
    await call(sim, 'POST', '/apis/apps/v1/namespaces/gc/deployments', deployment('bg'));
    await call(sim, 'POST', '/apis/apps/v1/namespaces/gc/deployments', deployment('orphan'));
    await waitFor(() => sim.store.list('pods', 'gc').length === 2, 'pods');
    await call(sim, 'DELETE', '/apis/apps/v1/namespaces/gc/deployments/bg?propagationPolicy=Background');
    await call(sim, 'DELETE', '/apis/apps/v1/namespaces/gc/deployments/orphan', {
      propagationPolicy: 'Orphan',
    });
    await waitFor(
      () => sim.store.list('pods', 'gc').length === 1 && sim.store.list('replicasets', 'gc').length === 1,
      'bg dependents gone',
    );
    const rs = sim.store.list('replicasets', 'gc')[0]!;
    expect(rs.metadata.name).toMatch(/^orphan-/);
    expect(rs.metadata.ownerReferences).toBeUndefined();
    const bad = await call(sim, 'DELETE', '/api/v1/namespaces/gc/replicasets/x?propagationPolicy=Sideways');
    expect(bad.status).toBe(404);
  });

  it('Foreground deletion keeps the owner, marked, until dependents are gone', async () => {
    await call(sim, 'POST', '/apis/apps/v1/namespaces/t/deployments', deployment('fg'));
    await waitFor(
      () => sim.store.list('replicasets', 't').some((r) => r.metadata.name?.startsWith('fg-')),
      'rs',
    );
    const r = await call(sim, 'DELETE', '/apis/apps/v1/namespaces/t/deployments/fg', {
      propagationPolicy: 'Foreground',
    });
    expect(r.json.metadata.deletionTimestamp).toBeTruthy();
    await waitFor(() => !sim.store.get('deployments', 't', 'fg'), 'owner removed');
    expect(sim.store.list('replicasets', 't').some((x) => x.metadata.name?.startsWith('fg-'))).toBe(false);
  });

  it('objects with finalizers wait for them to be removed', async () => {
    await call(sim, 'POST', '/api/v1/namespaces/t/configmaps', {
      ...cm('fin'),
      metadata: { name: 'fin', finalizers: ['tend.dev/hold'] },
    });
    const del = await call(sim, 'DELETE', '/api/v1/namespaces/t/configmaps/fin');
    expect(del.status).toBe(202);
    expect(del.json.metadata.deletionTimestamp).toBeTruthy();
    await call(
      sim,
      'PATCH',
      '/api/v1/namespaces/t/configmaps/fin',
      { metadata: { finalizers: null } },
      { contentType: 'application/merge-patch+json' },
    );
    expect((await call(sim, 'GET', '/api/v1/namespaces/t/configmaps/fin')).status).toBe(404);
  });

  it('a namespace with finalizers stays Terminating until they are removed, then goes with its contents', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', {
      ...ns('held'),
      metadata: { name: 'held', finalizers: ['tend.dev/hold'] },
    });
    await call(sim, 'POST', '/api/v1/namespaces/held/configmaps', cm('inside'));
    await call(sim, 'POST', '/api/v1/namespaces', ns('free'));
    // Deleted in this order, so the controller finishes `held` (or would) before `free`.
    await call(sim, 'DELETE', '/api/v1/namespaces/held');
    await call(sim, 'DELETE', '/api/v1/namespaces/free');
    await waitFor(() => !sim.store.get('namespaces', '', 'free'), 'the namespace without finalizers gone');
    expect(sim.store.get('namespaces', '', 'held')?.status?.phase).toBe('Terminating');
    expect(sim.store.get('configmaps', 'held', 'inside')).toBeDefined();
    await call(
      sim,
      'PATCH',
      '/api/v1/namespaces/held',
      { metadata: { finalizers: null } },
      { contentType: 'application/merge-patch+json' },
    );
    expect((await call(sim, 'GET', '/api/v1/namespaces/held')).status).toBe(404);
    expect(sim.store.get('configmaps', 'held', 'inside')).toBeUndefined();
  });
});

describe('watch', () => {
  function openWatch(path: string): Promise<{
    lines: () => {
      type: string;
      object: { metadata: { name: string; resourceVersion: string }; code?: number };
    }[];
    close: () => void;
  }> {
    return new Promise((resolve, reject) => {
      import('node:https').then(({ request }) => {
        let buf = '';
        const req = request(
          `${sim.url}${path}`,
          { ca: sim.caPem, headers: { Authorization: `Bearer ${sim.token}` } },
          (res) => {
            res.on('data', (d: Buffer) => (buf += d.toString()));
            resolve({
              lines: () =>
                buf
                  .split('\n')
                  .filter(Boolean)
                  .map((l) => JSON.parse(l)),
              close: () => req.destroy(),
            });
          },
        );
        req.on('error', (e) => (e.message.includes('socket hang up') ? undefined : reject(e)));
        req.end();
      }, reject);
    });
  }

  it('streams events after a resourceVersion, filtered by label selector', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('w'));
    const first = (await call(sim, 'POST', '/api/v1/namespaces/w/configmaps', cm('before', { x: '1' }))).json;
    const w = await openWatch(
      `/api/v1/namespaces/w/configmaps?watch=1&labelSelector=x%3D1&resourceVersion=${first.metadata.resourceVersion}`,
    );
    try {
      await call(sim, 'POST', '/api/v1/namespaces/w/configmaps', cm('other'));
      await call(sim, 'POST', '/api/v1/namespaces/w/configmaps', cm('after', { x: '1' }));
      await call(
        sim,
        'PATCH',
        '/api/v1/namespaces/w/configmaps/before',
        { metadata: { labels: { x: '2' } } },
        { contentType: 'application/merge-patch+json' },
      );
      await waitFor(() => w.lines().length >= 2, 'events');
      expect(w.lines().map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual([
        'ADDED after',
        'DELETED before',
      ]);
    } finally {
      w.close();
    }
  });

  it('without a resourceVersion starts with ADDED for existing objects', async () => {
    const w = await openWatch(
      '/api/v1/namespaces/w/configmaps?watch=true&fieldSelector=metadata.name%3Dafter',
    );
    try {
      await waitFor(() => w.lines().length >= 1, 'initial event');
      expect(w.lines()[0]!.type).toBe('ADDED');
    } finally {
      w.close();
    }
  });

  it('reads boolean parameters as the API server does: only absent, 0 and false (any case) are false', async () => {
    for (const value of ['true', 'True', 'TRUE', 't', 'T', '1', 'yes', '']) {
      const w = await openWatch(
        `/api/v1/namespaces/w/configmaps?watch=${value}&fieldSelector=metadata.name%3Dafter`,
      );
      try {
        await waitFor(() => w.lines().length >= 1, `an event for watch=${value}`);
        expect(w.lines()[0]!.type, `watch=${value}`).toBe('ADDED');
      } finally {
        w.close();
      }
    }
    for (const value of ['false', 'False', 'FALSE', '0']) {
      const r = await call(sim, 'GET', `/api/v1/namespaces/w/configmaps?watch=${value}`);
      expect(r.json.kind, `watch=${value}`).toBe('ConfigMapList');
    }
  });

  it('answers an ERROR event with 410 Expired for a compacted resourceVersion', async () => {
    const w = await openWatch('/api/v1/namespaces/w/configmaps?watch=1&resourceVersion=-5');
    await waitFor(() => w.lines().length >= 1, 'error event');
    expect(w.lines()[0]).toMatchObject({ type: 'ERROR', object: { code: 410 } });
    w.close();
  });
});

describe('pods', () => {
  it('follows the rule table: exit codes from annotations and commands', async () => {
    await call(sim, 'POST', '/api/v1/namespaces', ns('rules'));
    await call(
      sim,
      'POST',
      '/api/v1/namespaces/rules/pods',
      pod('ok', { restartPolicy: 'Never', command: ['sh', '-c', 'echo done'] }),
    );
    await call(
      sim,
      'POST',
      '/api/v1/namespaces/rules/pods',
      pod('bad', { restartPolicy: 'Never', annotations: { 'kube-sim.tend.dev/exit-code': '4' } }),
    );
    await call(
      sim,
      'POST',
      '/api/v1/namespaces/rules/pods',
      pod('crash', { annotations: { 'kube-sim.tend.dev/exit-code': '1' } }),
    );
    await call(
      sim,
      'POST',
      '/api/v1/namespaces/rules/pods',
      pod('pull', { annotations: { 'kube-sim.tend.dev/image-pull': 'fail' } }),
    );
    await waitFor(() => sim.store.get('pods', 'rules', 'ok')?.status?.phase === 'Succeeded', 'ok');
    const bad = await waitFor(
      () =>
        sim.store.get('pods', 'rules', 'bad')?.status?.phase === 'Failed'
          ? sim.store.get('pods', 'rules', 'bad')
          : undefined,
      'bad',
    );
    expect(bad.status.containerStatuses[0].state.terminated.exitCode).toBe(4);
    const crash = await waitFor(
      () =>
        sim.store.get('pods', 'rules', 'crash')?.status?.containerStatuses?.[0]?.state?.waiting?.reason ===
        'CrashLoopBackOff',
      'crash loop',
    );
    expect(crash).toBe(true);
    expect(
      sim.store.get('pods', 'rules', 'pull')?.status?.containerStatuses?.[0]?.state?.waiting?.reason,
    ).toBe('ErrImagePull');
    expect(sim.store.logs('rules', 'ok')).toEqual(['done']);
    const log = await call(sim, 'GET', '/api/v1/namespaces/rules/pods/pull/log');
    expect(log.status).toBe(400);
  });
});
