/**
 * A Garden 0.12 helm module's `base`: the module deploys the base module's chart, with the base's
 * values under its own (a JSON merge patch, as Garden merges them), and the container module of
 * the merged serviceResource built first. Refused as Garden refuses it: a base that is not a helm
 * module, or a module with a chart of its own. A stand-in `helm` prints a fixed rendering and
 * keeps what it was given.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validateCommand } from '../../../src/commands/validate.js';
import type { TendError } from '../../../src/errors.js';
import { makeProject, removeProjects, runTend } from '../../helpers/project.js';
import { kubectlJson, startSim, type SimHandle } from './helpers.js';

let h: SimHandle;
beforeAll(async () => {
  h = await startSim();
});
const dirs: string[] = [];
afterAll(async () => {
  await h?.stop();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  removeProjects();
});

/** A `helm` that prints a Deployment named after the release, keeping its arguments and values. */
function fakeHelm(): string {
  const bin = mkdtempSync(path.join(os.tmpdir(), 'tend-helm-base-'));
  dirs.push(bin);
  writeFileSync(
    path.join(bin, 'helm'),
    `#!/bin/sh
printf '%s\\n' "$@" > "${bin}/argv-$2"
for last; do :; done
cat "$last" > "${bin}/values-$2"
cat <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: { name: $2 }
spec:
  selector: { matchLabels: { app: $2 } }
  template:
    metadata: { labels: { app: $2 } }
    spec: { containers: [{ name: main, image: nginx }] }
EOF
`,
  );
  chmodSync(path.join(bin, 'helm'), 0o755);
  return bin;
}

const project = `kind: Project
name: helm-base
environments: [{ name: dev, defaultNamespace: helm-base }]
providers: [{ name: local-kubernetes, namespace: "\${environment.namespace}" }]
`;

const baseModule = `kind: Module
type: helm
name: base-chart
chartPath: chart
skipDeploy: true
values:
  replicas: 2
  image: { repository: registry.example/base, tag: base }
  debug: true
serviceResource: { kind: Deployment }
`;

describe("a helm module's base", () => {
  it("deploys the base's chart with the base's values under its own", async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'base/garden.yml': baseModule,
      'base/chart/Chart.yaml': 'apiVersion: v2\nname: base\nversion: 0.1.0\n',
      'base/chart/templates/deployment.yaml': '# rendered by helm\n',
      'api/garden.yml': `kind: Module
type: helm
name: api
base: base-chart
values:
  image: { tag: api }
  debug: null
`,
    });
    const validated = await validateCommand({ root, var: [] });
    expect(validated.data.actions.map((a) => `${a.ref} ${a.type} ${a.file}:${a.line}`)).toEqual([
      'deploy.api helm api/garden.yml:1',
    ]);
    const bin = fakeHelm();
    const deployed = await runTend(
      ['deploy', '--kubeconfig', h.kubeconfig, '--context', 'kube-sim', '--json'],
      { cwd: root, env: { PATH: `${bin}${path.delimiter}${process.env.PATH ?? ''}` }, timeoutMs: 120_000 },
    );
    expect(deployed.code, `${deployed.stdout}\n${deployed.stderr}`).toBe(0);
    const argv = readFileSync(path.join(bin, 'argv-api'), 'utf8').split('\n');
    expect(argv.slice(0, 3)).toEqual(['template', 'api', path.join(root, 'base', 'chart')]);
    expect(parse(readFileSync(path.join(bin, 'values-api'), 'utf8'))).toEqual({
      replicas: 2,
      image: { repository: 'registry.example/base', tag: 'api' },
    });
    const deployment = await kubectlJson<{ metadata: { name: string } }>(
      h.kubeconfig,
      ...['-n', 'helm-base', 'get', 'deployment', 'api'],
    );
    expect(deployment.metadata.name).toBe('api');
  }, 120_000);

  it('is refused as Garden refuses it: no such module, not a helm module, a chart of its own', async () => {
    const root = makeProject({
      'project.garden.yml': project,
      'base/garden.yml': baseModule,
      'base/chart/Chart.yaml': 'apiVersion: v2\nname: base\nversion: 0.1.0\n',
      'exec/garden.yml': 'kind: Module\ntype: exec\nname: tools\n',
      'a/garden.yml': 'kind: Module\ntype: helm\nname: a\nbase: missing\n',
      'b/garden.yml': 'kind: Module\ntype: helm\nname: b\nbase: tools\n',
      'c/garden.yml': 'kind: Module\ntype: helm\nname: c\nbase: base-chart\n',
      'c/Chart.yaml': 'apiVersion: v2\nname: c\nversion: 0.1.0\n',
    });
    let error: TendError | undefined;
    await validateCommand({ root, var: [] }).catch((e: unknown) => (error = e as TendError));
    const { errors } = error!.detail as {
      errors: { message: string; location: { file: string; line: number } }[];
    };
    expect(errors.map((e) => `${e.location.file}:${e.location.line} ${e.message}`)).toEqual([
      'a/garden.yml:4 base: there is no module missing',
      'b/garden.yml:4 base: module tools is of type exec, not a helm module',
      'c/garden.yml:4 base: module c has a chart of its own (Chart.yaml) and a base; Helm charts cannot be merged, remove one (as Garden requires)',
    ]);
  });
});
