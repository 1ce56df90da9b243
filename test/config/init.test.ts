/**
 * What `tend init` makes of a directory (src/config/init/): names, pairing builds with the
 * deploys of their images, overlays, and what it leaves out and why. test/commands/init.test.ts
 * runs the command itself.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { detect } from '../../src/config/init/detect.js';
import { planInit, toName } from '../../src/config/init/plan.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const plan = (files: Record<string, string>, directory = 'shop') =>
  planInit(detect(makeProject(files)), directory);
const refs = (p: ReturnType<typeof planInit>) =>
  p.actions.map(
    (a) => `${a.kind.toLowerCase()}.${a.name}${a.dependencies.length ? ` <- ${a.dependencies}` : ''}`,
  );
const deployment = (name: string, image: string) =>
  `apiVersion: apps/v1\nkind: Deployment\nmetadata: { name: ${name} }\nspec:\n  template:\n    spec:\n      containers: [{ name: ${name}, image: "${image}" }]\n`;

describe('tend init: names', () => {
  it('makes names of directory names: lower case, other characters as -, bounded, a fallback', () => {
    expect(toName('My_Shop.v2', 'x')).toBe('my-shop-v2');
    expect(toName('___', 'project')).toBe('project');
    expect(toName('a'.repeat(29) + '-b', 'x', 30)).toBe('a'.repeat(29));
    expect(plan({}, 'Über Shop!').project).toBe('uber-shop');
  });

  it('gives two builds of one name a suffix, and a Dockerfile.<x> its own build', () => {
    const p = plan({
      'a/api/Dockerfile': 'FROM scratch\n',
      'b/api/Dockerfile': 'FROM scratch\n',
      'b/api/Dockerfile.worker': 'FROM scratch\n',
    });
    expect(refs(p)).toEqual(['build.api', 'build.api-2', 'build.api-worker']);
    expect(p.actions[2]!.spec).toEqual({ dockerfile: 'Dockerfile.worker' });
    expect(p.files.map((f) => f.path)).toEqual(['tend.yml', 'a/api/api.tend.yml', 'b/api/api-2.tend.yml']);
  });
});

describe('tend init: builds and deploys', () => {
  it('pairs a build with the deploy whose manifest names its image, in another directory too', () => {
    const p = plan({
      'worker/Dockerfile': 'FROM scratch\n',
      'deploy/worker.yaml': deployment('worker', 'registry.example.com/acme/worker:1.2@sha256:abc'),
      'deploy/db.yaml': deployment('db', 'postgres:16'),
    });
    expect(refs(p)).toEqual(['build.worker', 'deploy.shop <- build.worker']);
    const deploy = p.actions[1]!;
    expect(deploy.spec).toEqual({
      files: ['deploy/db.yaml', 'deploy/worker.yaml'],
      image: '${actions.build.worker.outputs.image}',
    });
    expect(deploy.notes.join('\n')).toMatch(
      /names image registry\.example\.com\/acme\/worker:1\.2@sha256:abc: it keeps it/,
    );
  });

  it('deploys the development overlay, not the base it builds on nor the files it covers', () => {
    const p = plan({
      'k8s/base/kustomization.yaml': 'resources: [web.yaml]\n',
      'k8s/base/web.yaml': deployment('web', 'nginx'),
      'k8s/overlays/canary/kustomization.yaml': 'resources: [../../base]\n',
      'k8s/overlays/local/kustomization.yaml': 'resources: [../../base]\n',
    });
    expect(refs(p)).toEqual(['deploy.shop']);
    expect(p.actions[0]!.spec).toEqual({ kustomize: { path: 'k8s/overlays/local' } });
    expect(p.leftOut).toEqual([
      expect.objectContaining({
        path: 'k8s/overlays/canary/kustomization.yaml',
        because: expect.stringMatching(/another overlay/),
      }),
    ]);
  });

  it('a start script where the directory deploys to Kubernetes is left out; elsewhere an exec Deploy', () => {
    const p = plan({
      'api/package.json': JSON.stringify({ scripts: { start: 'node .' } }),
      'api/k8s/api.yaml': deployment('api', 'api'),
      'web/package.json': JSON.stringify({ scripts: { start: 'vite' } }),
      'broken/package.json': '{ not json',
    });
    expect(refs(p)).toEqual(['deploy.api', 'deploy.web']);
    expect(p.actions[1]).toMatchObject({
      type: 'exec',
      spec: { command: ['npm', 'start'], persistent: true },
    });
    expect(p.providers).toEqual(['exec', 'kubernetes']);
    expect(Object.fromEntries(p.leftOut.map((l) => [l.path, l.because]))).toEqual({
      'api/package.json': expect.stringMatching(/deploys to Kubernetes/),
      'broken/package.json': 'not valid JSON',
    });
  });

  it('leaves out what is not a plain manifest file, and says why', () => {
    const p = plan({
      'mixed.yaml': `${deployment('a', 'x')}---\nsome: config\n`,
      'rbac.yaml':
        'apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: { name: reader }\n',
      'skaffold.yaml': 'apiVersion: skaffold/v4beta11\nkind: Config\n',
      'values.yaml': 'replicas: 2\n',
    });
    expect(refs(p)).toEqual([]);
    expect(p.providers).toEqual(['exec']);
    expect(Object.fromEntries(p.leftOut.map((l) => [l.path, l.because]))).toEqual({
      'mixed.yaml': 'mixes Kubernetes objects with other YAML documents',
      'rbac.yaml': expect.stringMatching(/^holds ClusterRole reader: cluster-scoped/),
      'skaffold.yaml': expect.stringMatching(/a Skaffold configuration/),
    });
  });
});
