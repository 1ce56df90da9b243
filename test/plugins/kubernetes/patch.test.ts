/**
 * patchResources' strategies on plain objects: strategic merge (lists merged by Kubernetes' merge
 * keys, directives), JSON merge patch (RFC 7386) and JSON patch (RFC 6902).
 */
import { describe, expect, it } from 'vitest';
import { applyPatch, PatchError } from '../../../src/plugins/kubernetes/patch.js';

const deployment = () => ({
  kind: 'Deployment',
  metadata: { name: 'web', labels: { app: 'web', tier: 'front' } },
  spec: {
    replicas: 3,
    template: {
      spec: {
        containers: [
          {
            name: 'web',
            image: 'web:v1',
            args: ['serve', '--port', '80'],
            env: [
              { name: 'A', value: '1' },
              { name: 'B', value: '2' },
            ],
            ports: [{ name: 'http', containerPort: 8080 }],
          },
          { name: 'sidecar', image: 'proxy:1' },
        ],
        tolerations: [{ key: 'a' }],
      },
    },
  },
});

describe('strategic merge (the default)', () => {
  it('merges containers, env and ports by their keys; replaces other lists; null removes', () => {
    const patched = applyPatch(deployment(), {
      kind: 'Deployment',
      name: 'web',
      patch: {
        metadata: { labels: { tier: null } },
        spec: {
          replicas: 1,
          template: {
            spec: {
              containers: [
                {
                  name: 'web',
                  image: 'web:v2',
                  args: ['serve'],
                  env: [
                    { name: 'B', value: 'two' },
                    { name: 'C', value: '3' },
                  ],
                  ports: [{ containerPort: 8080, protocol: 'TCP' }],
                },
              ],
              tolerations: [{ key: 'b' }],
            },
          },
        },
      },
    }) as ReturnType<typeof deployment>;
    expect(patched.metadata.labels).toEqual({ app: 'web' });
    expect(patched.spec.replicas).toBe(1);
    const [web, sidecar] = patched.spec.template.spec.containers;
    expect(web).toEqual({
      name: 'web',
      image: 'web:v2',
      args: ['serve'],
      env: [
        { name: 'A', value: '1' },
        { name: 'B', value: 'two' },
        { name: 'C', value: '3' },
      ],
      ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }],
    });
    expect(sidecar).toEqual({ name: 'sidecar', image: 'proxy:1' });
    expect(patched.spec.template.spec.tolerations).toEqual([{ key: 'b' }]);
  });

  it('applies $patch: delete to a list item and $patch: replace to a list and a mapping', () => {
    const patched = applyPatch(deployment(), {
      kind: 'Deployment',
      name: 'web',
      patch: {
        metadata: { labels: { $patch: 'replace', only: 'this' } },
        spec: {
          template: {
            spec: {
              containers: [
                { name: 'sidecar', $patch: 'delete' },
                { name: 'web', env: [{ $patch: 'replace' }, { name: 'Z', value: 'z' }] },
              ],
            },
          },
        },
      },
    }) as ReturnType<typeof deployment>;
    expect(patched.metadata.labels).toEqual({ only: 'this' });
    expect(patched.spec.template.spec.containers.map((c) => c.name)).toEqual(['web']);
    expect(patched.spec.template.spec.containers[0]!.env).toEqual([{ name: 'Z', value: 'z' }]);
  });

  it('leaves the given object as it was', () => {
    const original = deployment();
    applyPatch(original, { kind: 'Deployment', name: 'web', patch: { spec: { replicas: 9 } } });
    expect(original).toEqual(deployment());
  });
});

describe('merge (RFC 7386) and json (RFC 6902)', () => {
  it('merge replaces lists as a whole', () => {
    const patched = applyPatch(deployment(), {
      kind: 'Deployment',
      name: 'web',
      strategy: 'merge',
      patch: { spec: { template: { spec: { containers: [{ name: 'only' }] } } } },
    }) as ReturnType<typeof deployment>;
    expect(patched.spec.template.spec.containers).toEqual([{ name: 'only' }]);
  });

  it('json applies add, remove, replace, move, copy and test in order', () => {
    const patched = applyPatch(deployment(), {
      kind: 'Deployment',
      name: 'web',
      strategy: 'json',
      patch: [
        { op: 'test', path: '/spec/replicas', value: 3 },
        { op: 'replace', path: '/spec/replicas', value: 2 },
        { op: 'add', path: '/spec/template/spec/containers/0/env/-', value: { name: 'D', value: '4' } },
        { op: 'remove', path: '/spec/template/spec/containers/1' },
        { op: 'copy', from: '/metadata/labels/app', path: '/metadata/labels/copied' },
        { op: 'move', from: '/metadata/labels/tier', path: '/metadata/labels/moved~1here' },
      ],
    }) as ReturnType<typeof deployment>;
    expect(patched.spec.replicas).toBe(2);
    expect(patched.spec.template.spec.containers.map((c) => c.name)).toEqual(['web']);
    expect(patched.spec.template.spec.containers[0]!.env?.map((e) => e.name)).toEqual(['A', 'B', 'D']);
    expect(patched.metadata.labels).toEqual({ app: 'web', copied: 'web', 'moved/here': 'front' });
  });

  it.each([
    [
      [{ op: 'test', path: '/spec/replicas', value: 4 }],
      'operation 0 ({"op":"test","path":"/spec/replicas","value":4}): path /spec/replicas is not 4',
    ],
    [
      [{ op: 'add', path: '/spec/replicas' }],
      'operation 0 ({"op":"add","path":"/spec/replicas"}): "add" needs "value"',
    ],
    [
      [{ op: 'remove', path: '/spec/template/spec/containers/5' }],
      'operation 0 ({"op":"remove","path":"/spec/template/spec/containers/5"}): path /spec/template/spec/containers/5: no item 5 in a list of 2',
    ],
    [{ spec: {} }, undefined],
  ])('json: %j fails with a message naming the operation', (patch, message) => {
    const apply = () =>
      applyPatch(deployment(), { kind: 'Deployment', name: 'web', strategy: 'json', patch });
    expect(apply).toThrow(PatchError);
    expect(apply).toThrow(message ?? 'a json patch is a list of operations');
  });
});
