/**
 * ValidatingAdmissionPolicies as the API server enforces them: policies and bindings stored and
 * validated (expressions compiled: a syntax error is a 422 naming the field), the requester from
 * the bearer token (`users` given at start, ServiceAccount tokens), `matchConstraints`,
 * `matchConditions`, `variables`, `validations` with `object`, `oldObject`, `request` and
 * `namespaceObject`, `messageExpression` and `reason`, `failurePolicy`, `validationActions` and
 * the binding's `matchResources` — on create, update, patch, server-side apply, delete,
 * deletecollection, dry runs and `/scale`. A refused write stores nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startKubeSim, type KubeSim } from '../src/index.js';
import { call, deployment } from './helpers.js';

const admission = '/apis/admissionregistration.k8s.io/v1';
const deployments = (namespace: string) => `/apis/apps/v1/namespaces/${namespace}/deployments`;
/** Tokens of people and robots, given at start. */
const robot = 'robot-token';
const person = 'person-token';

let sim: KubeSim;
beforeAll(async () => {
  sim = await startKubeSim({
    users: {
      [robot]: { name: 'system:serviceaccount:ops:robot', groups: ['system:serviceaccounts'] },
      [person]: { name: 'jane', groups: ['developers'] },
    },
  });
  for (const [name, labels] of [
    ['marked', { owner: 'robot' }],
    ['unmarked', {}],
  ] as const) {
    await call(sim, 'POST', '/api/v1/namespaces', { metadata: { name, labels } });
  }
  // Both may do anything RBAC can grant: what stops them below is admission alone.
  await call(sim, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    metadata: { name: 'everything' },
    rules: [{ apiGroups: ['*'], resources: ['*', '*/scale'], verbs: ['*'] }],
  });
  await call(sim, 'POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    metadata: { name: 'everything' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'everything' },
    subjects: [
      { kind: 'User', name: 'system:serviceaccount:ops:robot' },
      { kind: 'User', name: 'jane' },
    ],
  });
});
afterAll(() => sim.stop());

/** The robot may write only in namespaces labelled owner=robot, and delete only namespaces so labelled. */
const robotPolicy = {
  metadata: { name: 'robot-owned-only' },
  spec: {
    failurePolicy: 'Fail',
    matchConstraints: {
      resourceRules: [
        {
          apiGroups: ['*'],
          apiVersions: ['*'],
          operations: ['CREATE', 'UPDATE', 'DELETE'],
          resources: ['*', '*/*'],
        },
      ],
    },
    matchConditions: [{ name: 'robot', expression: "request.userInfo.username.endsWith(':robot')" }],
    variables: [
      {
        name: 'ns',
        expression:
          "request.resource.resource == 'namespaces' ? (request.operation == 'CREATE' ? object : oldObject) : namespaceObject",
      },
    ],
    validations: [
      {
        expression:
          "variables.ns != null && has(variables.ns.metadata.labels) && 'owner' in variables.ns.metadata.labels && variables.ns.metadata.labels['owner'] == 'robot'",
        messageExpression: "'namespace ' + request.namespace + ' is not the robot\\'s'",
        reason: 'Forbidden',
      },
      // No default reason given: Invalid (422), the default message.
      { expression: "request.operation != 'UPDATE' || object.spec.replicas <= 5" },
    ],
  },
};

async function create(path: string, body: unknown) {
  const res = await call(sim, 'POST', path, body);
  expect(res.status, res.text).toBe(201);
  return res;
}

describe('ValidatingAdmissionPolicy', () => {
  it('serves the kinds, and refuses a policy whose expression does not compile or a binding without actions (422)', async () => {
    const group = await call(sim, 'GET', admission);
    expect((group.json.resources as { name: string; namespaced: boolean }[]).map((r) => r.name)).toEqual(
      expect.arrayContaining(['validatingadmissionpolicies', 'validatingadmissionpolicybindings']),
    );
    const broken = structuredClone(robotPolicy);
    broken.metadata.name = 'broken';
    broken.spec.validations[0]!.expression = 'object.metadata.name ==';
    const refused = await call(sim, 'POST', `${admission}/validatingadmissionpolicies`, broken);
    expect(refused.status).toBe(422);
    expect(refused.json.details.causes[0]).toMatchObject({ field: 'spec.validations[0].expression' });
    expect(refused.json.details.causes[0].message).toMatch(/^Invalid value: compilation failed: /);
    const noActions = await call(sim, 'POST', `${admission}/validatingadmissionpolicybindings`, {
      metadata: { name: 'no-actions' },
      spec: { policyName: 'robot-owned-only' },
    });
    expect(noActions.status).toBe(422);
    expect(noActions.json.details.causes).toEqual([
      expect.objectContaining({ field: 'spec.validationActions', message: 'Required value' }),
    ]);
    // Nothing stored from either.
    expect(sim.store.list('validatingadmissionpolicies')).toEqual([]);
    expect(sim.store.list('validatingadmissionpolicybindings')).toEqual([]);
  });

  it('refuses what the policy denies, in the API server’s words, and stores nothing of it', async () => {
    await create(`${admission}/validatingadmissionpolicies`, robotPolicy);
    await create(`${admission}/validatingadmissionpolicybindings`, {
      metadata: { name: 'robot-owned-only-binding' },
      spec: { policyName: 'robot-owned-only', validationActions: ['Deny'] },
    });
    const denied = await call(sim, 'POST', deployments('unmarked'), deployment('web'), { token: robot });
    expect(denied.status).toBe(403);
    expect(denied.json).toMatchObject({ kind: 'Status', reason: 'Forbidden', code: 403 });
    expect(denied.json.message).toBe(
      `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'robot-owned-only' with binding 'robot-owned-only-binding' denied request: namespace unmarked is not the robot's`,
    );
    expect(sim.store.get('deployments', 'unmarked', 'web')).toBeUndefined();
    // A dry run is admitted the same way.
    const dry = await call(sim, 'POST', `${deployments('unmarked')}?dryRun=All`, deployment('web'), {
      token: robot,
    });
    expect(dry.status).toBe(403);
    // In its own namespace the robot works; a person is not matched by the policy at all.
    expect((await call(sim, 'POST', deployments('marked'), deployment('web'), { token: robot })).status).toBe(
      201,
    );
    expect(
      (await call(sim, 'POST', deployments('unmarked'), deployment('web'), { token: person })).status,
    ).toBe(201);
  });

  it('checks updates with object and oldObject: patch, server-side apply and /scale (default reason Invalid, 422)', async () => {
    const tooMany = await call(
      sim,
      'PATCH',
      `${deployments('marked')}/web`,
      { spec: { replicas: 9 } },
      { token: robot, contentType: 'application/merge-patch+json' },
    );
    expect(tooMany.status).toBe(422);
    expect(tooMany.json.reason).toBe('Invalid');
    expect(tooMany.json.message).toMatch(
      /denied request: failed expression: request.operation != 'UPDATE' \|\| object.spec.replicas <= 5$/,
    );
    expect(sim.store.get('deployments', 'marked', 'web')!.spec.replicas).toBe(1);
    const scaled = await call(
      sim,
      'PATCH',
      `${deployments('marked')}/web/scale`,
      { spec: { replicas: 9 } },
      { token: robot, contentType: 'application/merge-patch+json' },
    );
    expect(scaled.status).toBe(422);
    const fine = await call(
      sim,
      'PATCH',
      `${deployments('marked')}/web?fieldManager=robot`,
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'web' }, spec: { replicas: 3 } },
      { token: robot, contentType: 'application/apply-patch+yaml' },
    );
    expect(fine.status, fine.text).toBe(200);
    // Server-side apply that creates is a CREATE: refused where the robot may not write.
    const applied = await call(
      sim,
      'PATCH',
      `${deployments('unmarked')}/other?fieldManager=robot`,
      deployment('other'),
      { token: robot, contentType: 'application/apply-patch+yaml' },
    );
    expect(applied.status).toBe(403);
    expect(sim.store.get('deployments', 'unmarked', 'other')).toBeUndefined();
  });

  it('checks deletes (oldObject) of objects, of namespaces by their own labels, and deletecollection', async () => {
    const namespace = await call(sim, 'DELETE', '/api/v1/namespaces/unmarked', undefined, { token: robot });
    expect(namespace.status).toBe(403);
    expect(namespace.json.message).toMatch(
      /^namespaces "unmarked" is forbidden: .* namespace unmarked is not/,
    );
    expect(sim.store.get('namespaces', '', 'unmarked')!.status?.phase).toBe('Active');
    const collection = await call(sim, 'DELETE', deployments('unmarked'), undefined, { token: robot });
    expect(collection.status).toBe(403);
    expect(sim.store.get('deployments', 'unmarked', 'web')).toBeDefined();
    // A namespace the robot creates must carry its label; then it may delete it.
    const unlabelled = await call(
      sim,
      'POST',
      '/api/v1/namespaces',
      { metadata: { name: 'r1' } },
      { token: robot },
    );
    expect(unlabelled.status).toBe(403);
    const labelled = await call(
      sim,
      'POST',
      '/api/v1/namespaces',
      { metadata: { name: 'r2', labels: { owner: 'robot' } } },
      { token: robot },
    );
    expect(labelled.status).toBe(201);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/r2', undefined, { token: robot })).status).toBe(
      202,
    );
    expect(
      (await call(sim, 'DELETE', `${deployments('marked')}/web`, undefined, { token: robot })).status,
    ).toBe(200);
  });

  it("narrows a policy with the binding's objectSelector and excludeResourceRules", async () => {
    await create(`${admission}/validatingadmissionpolicies`, {
      metadata: { name: 'keep-guarded' },
      spec: {
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: [''],
              apiVersions: ['v1'],
              operations: ['DELETE'],
              resources: ['configmaps', 'secrets'],
            },
          ],
        },
        validations: [{ expression: 'false', message: 'guarded objects stay' }],
      },
    });
    await create(`${admission}/validatingadmissionpolicybindings`, {
      metadata: { name: 'keep-guarded' },
      spec: {
        policyName: 'keep-guarded',
        validationActions: ['Deny'],
        matchResources: {
          objectSelector: { matchExpressions: [{ key: 'guarded', operator: 'Exists' }] },
          excludeResourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['*'], resources: ['secrets'] },
          ],
        },
      },
    });
    const guarded = { labels: { guarded: 'yes' } };
    for (const [kind, name, labels] of [
      ['configmaps', 'g', guarded],
      ['configmaps', 'free', {}],
      ['secrets', 'g', guarded],
    ] as const) {
      await create(`/api/v1/namespaces/unmarked/${kind}`, { metadata: { name, ...labels } });
    }
    const refused = await call(sim, 'DELETE', '/api/v1/namespaces/unmarked/configmaps/g');
    expect(refused.status).toBe(422);
    expect(refused.json.message).toMatch(/denied request: guarded objects stay$/);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/unmarked/configmaps/free')).status).toBe(200);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/unmarked/secrets/g')).status).toBe(200);
    await call(sim, 'DELETE', `${admission}/validatingadmissionpolicybindings/keep-guarded`);
    expect((await call(sim, 'DELETE', '/api/v1/namespaces/unmarked/configmaps/g')).status).toBe(200);
  });

  it('fails closed on an expression that errors (failurePolicy Fail), open with Ignore; Warn and Audit do not deny', async () => {
    await create(`${admission}/validatingadmissionpolicies`, {
      metadata: { name: 'needs-team' },
      spec: {
        matchConstraints: {
          resourceRules: [
            { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] },
          ],
        },
        // `labels` is missing on the ConfigMaps below: the expression errors.
        validations: [{ expression: "object.metadata.labels['team'] != ''" }],
      },
    });
    await create(`${admission}/validatingadmissionpolicybindings`, {
      metadata: { name: 'needs-team' },
      spec: {
        policyName: 'needs-team',
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { owner: 'robot' } } },
      },
    });
    const configMap = (name: string) => ({ metadata: { name }, data: {} });
    // Every user, the administrator too, in the namespaces the binding selects.
    const failed = await call(sim, 'POST', '/api/v1/namespaces/marked/configmaps', configMap('a'));
    expect(failed.status).toBe(422);
    expect(failed.json.message).toMatch(
      /ValidatingAdmissionPolicy 'needs-team' with binding 'needs-team' denied request: expression 'object.metadata.labels\['team'\] != ''' resulted in error: /,
    );
    // The binding's namespaceSelector leaves the other namespaces out.
    expect((await call(sim, 'POST', '/api/v1/namespaces/unmarked/configmaps', configMap('a'))).status).toBe(
      201,
    );
    const policy = sim.store.get('validatingadmissionpolicies', '', 'needs-team')!;
    const ignore = await call(
      sim,
      'PATCH',
      `${admission}/validatingadmissionpolicies/needs-team`,
      { spec: { failurePolicy: 'Ignore' } },
      { contentType: 'application/merge-patch+json' },
    );
    expect(ignore.status, ignore.text).toBe(200);
    expect((await call(sim, 'POST', '/api/v1/namespaces/marked/configmaps', configMap('b'))).status).toBe(
      201,
    );
    await call(
      sim,
      'PATCH',
      `${admission}/validatingadmissionpolicies/needs-team`,
      { spec: { failurePolicy: policy.spec.failurePolicy ?? 'Fail' } },
      { contentType: 'application/merge-patch+json' },
    );
    await call(
      sim,
      'PATCH',
      `${admission}/validatingadmissionpolicybindings/needs-team`,
      { spec: { validationActions: ['Warn', 'Audit'] } },
      { contentType: 'application/merge-patch+json' },
    );
    expect((await call(sim, 'POST', '/api/v1/namespaces/marked/configmaps', configMap('c'))).status).toBe(
      201,
    );
  });
});
