/**
 * What applying a deployment's manifests needs from the simulator: ServiceAccount tokens from the
 * TokenRequest API, RBAC kinds validated and enforced for those tokens as a real API server
 * does (ClusterRoleBindings everywhere, RoleBindings in their namespace, resourceNames,
 * subresources, the 403 message), PersistentVolumeClaims (bound, with the size asked for), and
 * pods that wait for the Secrets, ConfigMaps and claims they reference.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../src/index.js';
import { call, ns, waitFor } from './helpers.js';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim({ podStartDelayMs: 5 });
  for (const name of ['team-a', 'team-b', 'apps']) await call(sim, 'POST', '/api/v1/namespaces', ns(name));
});
afterAll(() => sim.stop());

const rbac = '/apis/rbac.authorization.k8s.io/v1';

/** A ServiceAccount and a token for it from the TokenRequest API. */
async function account(namespace: string, name: string): Promise<string> {
  const created = await call(sim, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts`, {
    metadata: { name },
  });
  expect(created.status, created.text).toBe(201);
  const token = await call(sim, 'POST', `/api/v1/namespaces/${namespace}/serviceaccounts/${name}/token`, {
    apiVersion: 'authentication.k8s.io/v1',
    kind: 'TokenRequest',
    spec: { expirationSeconds: 3600 },
  });
  expect(token.status, token.text).toBe(201);
  expect(token.json.kind).toBe('TokenRequest');
  return token.json.status.token as string;
}

describe('ServiceAccount tokens and RBAC', () => {
  it('serves the RBAC kinds, claims and the token subresource in discovery', async () => {
    const core = await call(sim, 'GET', '/api/v1');
    const names = (core.json.resources as { name: string }[]).map((r) => r.name);
    expect(names).toEqual(expect.arrayContaining(['persistentvolumeclaims', 'serviceaccounts/token']));
    const group = await call(sim, 'GET', rbac);
    expect(group.json.resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'clusterroles', namespaced: false, kind: 'ClusterRole' }),
        expect.objectContaining({ name: 'clusterrolebindings', namespaced: false }),
        expect.objectContaining({ name: 'roles', namespaced: true }),
        expect.objectContaining({ name: 'rolebindings', namespaced: true }),
      ]),
    );
  });

  it('refuses a token-less or unknown token (401), and a ServiceAccount with no binding (403, in its words)', async () => {
    const token = await account('team-a', 'nobody');
    expect((await call(sim, 'GET', '/api/v1/namespaces', undefined, { token: null })).status).toBe(401);
    expect(
      (await call(sim, 'GET', '/api/v1/namespaces', undefined, { token: 'kube-sim-sa.forged' })).status,
    ).toBe(401);
    // Discovery is open to every authenticated user.
    expect((await call(sim, 'GET', '/api/v1', undefined, { token })).status).toBe(200);
    const pods = await call(sim, 'GET', '/api/v1/namespaces/team-a/pods', undefined, { token });
    expect(pods.status).toBe(403);
    expect(pods.json).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
    expect(pods.json.message).toBe(
      'pods is forbidden: User "system:serviceaccount:team-a:nobody" cannot list resource "pods" in API group "" in the namespace "team-a"',
    );
    const deployment = await call(
      sim,
      'DELETE',
      '/apis/apps/v1/namespaces/team-a/deployments/web',
      undefined,
      {
        token,
      },
    );
    expect(deployment.json.message).toBe(
      'deployments.apps "web" is forbidden: User "system:serviceaccount:team-a:nobody" cannot delete resource "deployments" in API group "apps" in the namespace "team-a"',
    );
    const namespaces = await call(sim, 'GET', '/api/v1/namespaces', undefined, { token });
    expect(namespaces.json.message).toMatch(
      /cannot list resource "namespaces" in API group "" at the cluster scope$/,
    );
    // The control endpoints take the simulator's own token only.
    expect((await call(sim, 'GET', '/_sim/requests', undefined, { token })).status).toBe(403);
    expect(sim.requests.list().at(-1)).toMatchObject({ user: 'system:serviceaccount:team-a:nobody' });
  });

  it('allows what a RoleBinding grants in its namespace only, and a ClusterRoleBinding everywhere', async () => {
    const token = await account('team-a', 'reader');
    const role = await call(sim, 'POST', `${rbac}/namespaces/team-a/roles`, {
      metadata: { name: 'pod-reader' },
      rules: [{ apiGroups: [''], resources: ['pods'], verbs: ['get', 'list'] }],
    });
    expect(role.status, role.text).toBe(201);
    await call(sim, 'POST', `${rbac}/namespaces/team-a/rolebindings`, {
      metadata: { name: 'reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'pod-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'team-a' }],
    });
    expect((await call(sim, 'GET', '/api/v1/namespaces/team-a/pods', undefined, { token })).status).toBe(200);
    expect((await call(sim, 'GET', '/api/v1/namespaces/team-b/pods', undefined, { token })).status).toBe(403);
    expect((await call(sim, 'GET', '/api/v1/pods', undefined, { token })).status).toBe(403);
    // A RoleBinding to a ClusterRole grants its rules in the binding's namespace only.
    await call(sim, 'POST', `${rbac}/clusterroles`, {
      metadata: { name: 'secret-reader' },
      rules: [{ apiGroups: [''], resources: ['secrets'], verbs: ['list'] }],
    });
    await call(sim, 'POST', `${rbac}/namespaces/team-a/rolebindings`, {
      metadata: { name: 'reader-secrets' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'secret-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'team-a' }],
    });
    expect((await call(sim, 'GET', '/api/v1/namespaces/team-a/secrets', undefined, { token })).status).toBe(
      200,
    );
    expect((await call(sim, 'GET', '/api/v1/namespaces/team-b/secrets', undefined, { token })).status).toBe(
      403,
    );
    // A rule for pods is not one for their logs, nor for another verb.
    expect(
      (await call(sim, 'GET', '/api/v1/namespaces/team-a/pods/x/log', undefined, { token })).status,
    ).toBe(403);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/team-a/pods/x', undefined, { token })).status).toBe(
      403,
    );

    await call(sim, 'POST', `${rbac}/clusterroles`, {
      metadata: { name: 'namespace-reader' },
      rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['get', 'list'] }],
    });
    await call(sim, 'POST', `${rbac}/clusterrolebindings`, {
      metadata: { name: 'reader-namespaces' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'namespace-reader' },
      subjects: [{ kind: 'ServiceAccount', name: 'reader', namespace: 'team-a' }],
    });
    expect((await call(sim, 'GET', '/api/v1/namespaces', undefined, { token })).status).toBe(200);
    expect((await call(sim, 'GET', '/api/v1/namespaces/team-b', undefined, { token })).status).toBe(200);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/team-b', undefined, { token })).status).toBe(403);
    // The administrator's token is not bound by any of it.
    expect((await call(sim, 'GET', '/api/v1/pods')).status).toBe(200);
  });

  it('limits a rule with resourceNames to those names, and never to a list', async () => {
    const token = await account('apps', 'one-map');
    await call(sim, 'POST', '/api/v1/namespaces/apps/configmaps', { metadata: { name: 'mine' } });
    await call(sim, 'POST', '/api/v1/namespaces/apps/configmaps', { metadata: { name: 'theirs' } });
    await call(sim, 'POST', `${rbac}/namespaces/apps/roles`, {
      metadata: { name: 'one-map' },
      rules: [
        { apiGroups: [''], resources: ['configmaps'], resourceNames: ['mine'], verbs: ['get', 'list'] },
      ],
    });
    await call(sim, 'POST', `${rbac}/namespaces/apps/rolebindings`, {
      metadata: { name: 'one-map' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'one-map' },
      subjects: [{ kind: 'ServiceAccount', name: 'one-map', namespace: 'apps' }],
    });
    const get = (name: string) =>
      call(sim, 'GET', `/api/v1/namespaces/apps/configmaps/${name}`, undefined, { token });
    expect((await get('mine')).status).toBe(200);
    expect((await get('theirs')).status).toBe(403);
    expect((await call(sim, 'GET', '/api/v1/namespaces/apps/configmaps', undefined, { token })).status).toBe(
      403,
    );
  });

  it('stops taking a token once its ServiceAccount is deleted (re-created under the same name too)', async () => {
    const token = await account('team-b', 'short-lived');
    expect((await call(sim, 'GET', '/api/v1', undefined, { token })).status).toBe(200);
    await call(sim, 'DELETE', '/api/v1/namespaces/team-b/serviceaccounts/short-lived');
    await call(sim, 'POST', '/api/v1/namespaces/team-b/serviceaccounts', {
      metadata: { name: 'short-lived' },
    });
    expect((await call(sim, 'GET', '/api/v1', undefined, { token })).status).toBe(401);
  });

  it.each([
    [
      'a rule without verbs',
      'clusterroles',
      { metadata: { name: 'r1' }, rules: [{ apiGroups: [''], resources: ['pods'] }] },
      /verbs/,
    ],
    [
      'a rule without resources',
      'clusterroles',
      { metadata: { name: 'r2' }, rules: [{ apiGroups: [''], verbs: ['get'] }] },
      /resource/,
    ],
    [
      'a binding to a Role',
      'clusterrolebindings',
      {
        metadata: { name: 'b1' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'x' },
      },
      /roleRef/,
    ],
    [
      'a ServiceAccount subject without a namespace',
      'clusterrolebindings',
      {
        metadata: { name: 'b2' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'x' },
        subjects: [{ kind: 'ServiceAccount', name: 'x' }],
      },
      /subjects\[0\]\.namespace/,
    ],
  ])('refuses %s with 422 Invalid', async (_what, plural, body, message) => {
    const res = await call(sim, 'POST', `${rbac}/${plural}`, body);
    expect(res.status, res.text).toBe(422);
    expect(res.json.reason).toBe('Invalid');
    expect(res.json.message).toMatch(message);
  });

  it("refuses a change of a binding's roleRef", async () => {
    const binding = {
      metadata: { name: 'fixed' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'a' },
      subjects: [],
    };
    expect((await call(sim, 'POST', `${rbac}/clusterrolebindings`, binding)).status).toBe(201);
    const changed = await call(
      sim,
      'PATCH',
      `${rbac}/clusterrolebindings/fixed`,
      { roleRef: { ...binding.roleRef, name: 'b' } },
      {
        contentType: 'application/merge-patch+json',
      },
    );
    expect(changed.status).toBe(422);
    expect(changed.json.message).toMatch(/cannot change roleRef/);
  });
});

describe('claims and what pods reference', () => {
  it('binds a PersistentVolumeClaim at once with the size asked for, and refuses one without access modes', async () => {
    const claim = await call(sim, 'POST', '/api/v1/namespaces/apps/persistentvolumeclaims', {
      metadata: { name: 'data' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    expect(claim.status, claim.text).toBe(201);
    expect(claim.json.status).toEqual({
      phase: 'Bound',
      accessModes: ['ReadWriteOnce'],
      capacity: { storage: '1Gi' },
    });
    const bad = await call(sim, 'POST', '/api/v1/namespaces/apps/persistentvolumeclaims', {
      metadata: { name: 'bad' },
      spec: { resources: { requests: { storage: '1Gi' } } },
    });
    expect(bad.status).toBe(422);
    expect(bad.json.message).toMatch(/spec\.accessModes/);
  });

  const waiting = async (pod: string) => {
    const res = await call(sim, 'GET', `/api/v1/namespaces/apps/pods/${pod}`);
    return res.json.status?.containerStatuses?.[0]?.state?.waiting as
      { reason: string; message?: string } | undefined;
  };
  const phase = async (pod: string) =>
    (await call(sim, 'GET', `/api/v1/namespaces/apps/pods/${pod}`)).json.status?.phase;

  it('keeps a pod waiting for the Secret its environment names, then starts it', async () => {
    await call(sim, 'POST', '/api/v1/namespaces/apps/pods', {
      metadata: { name: 'needs-secret' },
      spec: {
        containers: [
          {
            name: 'app',
            image: 'app:1',
            env: [{ name: 'URL', valueFrom: { secretKeyRef: { name: 'database', key: 'url' } } }],
          },
        ],
      },
    });
    expect(
      await waitFor(
        async () =>
          (await waiting('needs-secret'))?.message === 'secret "database" not found' &&
          waiting('needs-secret'),
        'the missing secret',
      ),
    ).toEqual({ reason: 'CreateContainerConfigError', message: 'secret "database" not found' });
    await call(sim, 'POST', '/api/v1/namespaces/apps/secrets', {
      metadata: { name: 'database' },
      stringData: { other: 'x' },
    });
    await waitFor(
      async () => (await waiting('needs-secret'))?.message?.includes("couldn't find key url"),
      'the missing key',
    );
    await call(
      sim,
      'PATCH',
      '/api/v1/namespaces/apps/secrets/database',
      { stringData: { url: 'postgres://db/tend' } },
      {
        contentType: 'application/merge-patch+json',
      },
    );
    await waitFor(async () => (await phase('needs-secret')) === 'Running', 'the pod to start');
  });

  it('keeps a pod waiting for a Secret volume and a claim, but not for an optional Secret', async () => {
    await call(sim, 'POST', '/api/v1/namespaces/apps/pods', {
      metadata: { name: 'needs-volumes' },
      spec: {
        containers: [{ name: 'app', image: 'app:1' }],
        volumes: [
          { name: 'token', secret: { secretName: 'agent-token' } },
          { name: 'maybe', secret: { secretName: 'nothing', optional: true } },
          { name: 'data', persistentVolumeClaim: { claimName: 'later' } },
        ],
      },
    });
    await waitFor(
      async () => (await waiting('needs-volumes'))?.message?.includes('secret "agent-token" not found'),
      'the secret volume',
    );
    expect((await waiting('needs-volumes'))?.reason).toBe('ContainerCreating');
    await call(sim, 'POST', '/api/v1/namespaces/apps/secrets', {
      metadata: { name: 'agent-token' },
      stringData: { token: 't' },
    });
    await waitFor(
      async () => (await waiting('needs-volumes'))?.message === 'persistentvolumeclaim "later" not found',
      'the claim',
    );
    await call(sim, 'POST', '/api/v1/namespaces/apps/persistentvolumeclaims', {
      metadata: { name: 'later' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    });
    await waitFor(async () => (await phase('needs-volumes')) === 'Running', 'the pod to start');
  });
});
