/**
 * Garden's references to actions beyond their outputs, as real projects write them: what the
 * configuration says of an action (`${actions.<kind>.<name>.buildPath}`, `.sourcePath`, `.name`,
 * `.disabled`, `.mode`: known before anything runs), and a 0.12 module's
 * `${modules.<name>.outputs.<key>}` in an action spec or in a templated file; and the errors of
 * references that are wrong, at their file:line.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { executeCommand } from '../../src/commands/execute.js';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = (providers: string, environments = '[{ name: local }]') => `apiVersion: garden.io/v2
kind: Project
name: refs
environments: ${environments}
providers: ${providers}
`;

/** `file:line:column message` of each problem `tend validate` finds. */
/** A 0.12 container module without a Dockerfile (image-only), its `image` as written, or none. */
const imageModule = (name: string, image?: string) =>
  `kind: Module\ntype: container\nname: ${name}\n${image === undefined ? '' : `image: ${image}\n`}`;

async function validationErrors(root: string): Promise<string[]> {
  let error: TendError | undefined;
  try {
    await validateCommand({ root, var: [] });
  } catch (caught) {
    error = caught as TendError;
  }
  const errors = (
    error?.detail as
      { errors: { message: string; location: { file: string; line: number; column: number } }[] } | undefined
  )?.errors;
  return (errors ?? []).map((e) => `${e.location.file}:${e.location.line}:${e.location.column} ${e.message}`);
}

/** `ref: dependencies` of each action `tend validate` lists. */
async function validatedDependencies(root: string, env?: string): Promise<string[]> {
  const { data, exitCode } = await validateCommand({ root, var: [], ...(env ? { env } : {}) });
  expect(exitCode).toBe(0);
  return data.actions.map((a) => `${a.ref}: ${a.dependencies.join(', ')}`);
}

describe("what the configuration says of an action (Garden's ActionReferenceContext)", () => {
  it('buildPath, sourcePath, name, disabled and mode: validate resolves them, the reading action depends on the action, and its command gets them', async () => {
    // As beaglesinspace/supabase-spilo: `kustomize build ${actions.build.manifests.buildPath}`.
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]'),
      'shared/base.yaml': 'kind: Base\n',
      'manifests/kustomization.yaml': 'resources: [base.yaml]\n',
      'plain/README': 'plain\n',
      'garden.yml': `kind: Build
type: exec
name: shared
source: { path: shared }
---
kind: Build
type: exec
name: manifests
source: { path: manifests }
copyFrom: [{ build: shared, sourcePath: base.yaml, targetPath: base.yaml }]
spec:
  command: [sh, -c, "echo built > built.txt"]
---
kind: Build
type: exec
name: plain
source: { path: plain }
---
kind: Deploy
type: exec
name: db
build: manifests
spec:
  deployCommand: [sh, -c, "cat \${actions.build.manifests.buildPath}/built.txt \${this.buildPath}/base.yaml"]
---
kind: Run
type: exec
name: show
spec:
  command:
    - echo
    - \${actions.build.manifests.buildPath}
    - \${actions.build.plain.buildPath}
    - \${actions.build.plain.sourcePath}
    - \${actions.deploy.db.buildPath}
    - \${actions.deploy.db.sourcePath}
    - \${actions.build.plain.name}
    - \${actions.build.plain.disabled}
    - \${actions.build.plain.mode}
    - \${this.sourcePath}
`,
    });
    expect(await validatedDependencies(root)).toEqual([
      'build.shared: ',
      'build.manifests: build.shared',
      'build.plain: ',
      'deploy.db: build.manifests',
      'run.show: build.manifests, build.plain, deploy.db',
    ]);

    const result = await executeCommand('run', ['show'], { root });
    expect(result.exitCode).toBe(0);
    const outputs = (ref: string) => result.data.actions.find((a) => a.ref === ref)?.outputs;
    // The Deploy ran in the Build's staged directory, which its command read by that path too.
    expect(outputs('deploy.db')?.log).toBe('built\nkind: Base');
    // A Build with copyFrom builds in .tend/build/<name>; one without, at its source; a Deploy's
    // buildPath is its Build's, its sourcePath its own.
    const staged = path.join(root, '.tend', 'build', 'manifests');
    const plain = path.join(root, 'plain');
    expect(outputs('run.show')?.log).toBe(
      [staged, plain, plain, staged, root, 'plain', 'false', 'default', root].join(' '),
    );
  });

  it("a disabled action's are read from its configuration: disabled is true, and it is no dependency and does not run", async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]', '[{ name: local }, { name: ci }]'),
      'tools/README': 'tools\n',
      'garden.yml': `kind: Build
type: exec
name: tools
source: { path: tools }
disabled: \${environment.name == "ci"}
spec:
  command: [sh, -c, "echo built"]
---
kind: Run
type: exec
name: show
spec:
  command: [echo, "\${actions.build.tools.disabled}", "\${actions.build.tools.buildPath}"]
`,
    });
    const tools = path.join(root, 'tools');
    expect(await validatedDependencies(root, 'ci')).toEqual(['run.show: ']);
    const ci = await executeCommand('run', ['show'], { root, env: 'ci' });
    expect(ci.data.actions.map((a) => [a.ref, a.outputs.log])).toEqual([['run.show', `true ${tools}`]]);

    expect(await validatedDependencies(root)).toEqual(['build.tools: ', 'run.show: build.tools']);
    const local = await executeCommand('run', ['show'], { root });
    expect(local.data.actions.map((a) => [a.ref, a.outputs.log])).toEqual([
      ['build.tools', 'built'],
      ['run.show', `false ${tools}`],
    ]);
  });

  it("the reading action's version covers them: the Build it reads changing gives it a new one", async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]'),
      'manifests/kustomization.yaml': 'resources: []\n',
      'garden.yml': `kind: Build
type: exec
name: manifests
source: { path: manifests }
---
kind: Deploy
type: exec
name: apply
include: []
spec:
  deployCommand: [ls, "\${actions.build.manifests.buildPath}"]
`,
    });
    const deploy = async () =>
      (await executeCommand('deploy', [], { root })).data.actions.map((a) => `${a.ref} ${a.state}`);
    const version = async () =>
      (await executeCommand('deploy', [], { root })).data.actions.find((a) => a.ref === 'deploy.apply')!
        .version;
    expect(await deploy()).toEqual(['build.manifests ready', 'deploy.apply ready']);
    expect(await deploy()).toEqual(['build.manifests cached', 'deploy.apply cached']);
    // The Deploy has no files of its own: the Build's version, part of its own, changes it.
    const before = await version();
    writeFileSync(path.join(root, 'manifests', 'kustomization.yaml'), 'resources: [db.yaml]\n');
    expect(await version()).not.toBe(before);
  });

  it('a reference to an unknown action, an unknown key, or the action itself is an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]'),
      'garden.yml': `kind: Build
type: exec
name: manifests
spec:
  command: ["true"]
---
kind: Run
type: exec
name: show
spec:
  command:
    - echo
    - \${actions.build.nope.buildPath}
    - \${actions.run.show.name}
    - \${modules.nope.outputs.image}
---
kind: Run
type: exec
name: typos
spec:
  command:
    - echo
    - \${actions.build.manifests.buildpath}
    - \${modules.manifests.path}
`,
    });
    expect(await validationErrors(root)).toEqual([
      'garden.yml:13:7 unknown action "build.nope" in a template expression; build actions: build.manifests',
      'garden.yml:14:7 run.show cannot reference itself ("actions.run.show.name"); write ${this.name}',
      'garden.yml:15:7 unknown module "nope" in a template expression ("modules.nope.outputs.image" reads ' +
        'the Build the module became, build.nope); build actions: build.manifests',
      'garden.yml:23:7 invalid action reference "actions.build.manifests.buildpath"; expected ' +
        'actions.<kind>.<name>.outputs.<key> (e.g. actions.build.api.outputs.image), or .version, ' +
        '.var.<name>, .name, .disabled, .mode, .buildPath, .sourcePath; did you mean ".buildPath"?',
      'garden.yml:24:7 invalid module reference "modules.manifests.path"; expected ' +
        'modules.<name>.outputs.<key> or modules.<name>.version (what tend reads of a module: the Build it became)',
    ]);
  });
});

describe("a 0.12 module's outputs, ${modules.<name>.outputs.<key>}", () => {
  const noBuild = 'has no Build (a container module without a Dockerfile deploys its image as it is)';
  /** What the errors of an image-only module's references say it gives. */
  const givesNames = (name: string) =>
    `tend gives modules.${name}.outputs.<local-image-name|local-image-id|deployment-image-name|deployment-image-id> ` +
    "(its image names), where Garden computes the rest from the module's version";
  const hint =
    '\n  (manifestTemplates and files are templated; list the file under `manifestFiles` to apply it as written, ' +
    'or write `$${` for a literal `${`)';
  const modules = `kind: Module
type: container
name: fetch
dockerfile: Dockerfile
---
kind: Module
type: kubernetes
name: cronjob
build:
  dependencies: [fetch]
files: [k8s/job.yaml]
`;
  const job = (image: string) => `apiVersion: batch/v1
kind: CronJob
metadata:
  name: sync-db
spec:
  schedule: "0 4 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: fetch
              image: ${image}
          restartPolicy: Never
`;

  it("is read in a kubernetes module's files as in its manifests, and in a Garden 0.13 action's spec, whose dependency it makes", async () => {
    // As Keyruu/randomplaydance: the module's files name the image of the module it builds on.
    const root = makeProject({
      'project.garden.yml': project('[{ name: local-kubernetes }]'),
      Dockerfile: 'FROM alpine\n',
      'garden.yml': `${modules}---
kind: Run
type: container
name: seed
spec:
  image: \${modules.fetch.outputs.deployment-image-id}
  command: [seed]
`,
      'k8s/job.yaml': job('registry.example.com/${modules.fetch.outputs.local-image-id}'),
    });
    expect(await validatedDependencies(root)).toEqual([
      'build.fetch: ',
      'deploy.cronjob: build.fetch',
      'run.seed: build.fetch',
    ]);
  });

  it("an image-only container module's image names are written in: no dependency, and the command gets them", async () => {
    // As Garden's getContainerModuleOutputs: a module without a Dockerfile gives its image.
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]'),
      'redis/garden.yml': imageModule('redis', 'registry.example.com:5000/cache/redis:6.2'),
      'garden.yml': `kind: Module
type: exec
name: show
tasks:
  - name: show
    command:
      - echo
      - \${modules.redis.outputs.deployment-image-id}
      - \${modules.redis.outputs.deployment-image-name}
      - \${modules.redis.outputs.local-image-id}
      - "name=\${modules.redis.outputs.local-image-name} modules.redis.outputs.local-image-id"
      - "'$\${modules.redis.outputs.local-image-id}'"
`,
    });
    expect(await validatedDependencies(root)).toEqual(['run.show: ']);
    const result = await executeCommand('run', ['show'], { root });
    expect(result.exitCode).toBe(0);
    // Text outside an expression, and an escaped one (a literal `${`), are not read as references.
    expect(result.data.actions.find((a) => a.ref === 'run.show')?.outputs?.log).toBe(
      'registry.example.com:5000/cache/redis:6.2 registry.example.com:5000/cache/redis ' +
        'registry.example.com:5000/cache/redis:6.2 name=registry.example.com:5000/cache/redis modules.redis.outputs.local-image-id ' +
        '${modules.redis.outputs.local-image-id}',
    );
  });

  it("an image-only module's tag, version or templated image is one error at its line; one naming no image is refused itself, what reads it no further error", async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: exec }]'),
      'garden.yml': `${imageModule('redis', 'redis@sha256:0123')}---
${imageModule('templated', '${var.image}')}---
${imageModule('nothing')}---
kind: Module
type: exec
name: show
tasks:
  - name: show
    command:
      - \${modules.redis.outputs.deployment-image-tag}
      - \${modules.redis.version}
      - \${modules.templated.outputs.deployment-image-id}
      - \${modules.nothing.outputs.deployment-image-id}
      - \${modules.redis.outputs.deployment-image-id.x}
`,
    });
    expect(await validationErrors(root)).toEqual([
      'garden.yml:13:1 container module nothing neither specifies image nor has a Dockerfile (Dockerfile) among ' +
        'its files; set image, or add the Dockerfile',
      `garden.yml:21:9 "modules.redis.outputs.deployment-image-tag": module redis ${noBuild}; ${givesNames('redis')}`,
      `garden.yml:22:9 "modules.redis.version": module redis ${noBuild}; ${givesNames('redis')}`,
      `garden.yml:23:9 "modules.templated.outputs.deployment-image-id": module templated ${noBuild}; its image ` +
        'is a template, which tend does not resolve for another module',
      `garden.yml:25:9 "modules.redis.outputs.deployment-image-id.x": module redis ${noBuild}; ${givesNames('redis')}`,
    ]);
  });

  it("in a templated file, an image-only module's tag, or one whose image is a template, is an error at its line", async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: local-kubernetes }]'),
      'garden.yml': `${imageModule('cache', 'redis:6.2')}---
${imageModule('templated', '${var.image}')}---
kind: Module
type: kubernetes
name: cronjob
files: [k8s/job.yaml]
`,
      'k8s/job.yaml': job(
        '${modules.cache.outputs.deployment-image-tag}:${modules.templated.outputs.local-image-id}',
      ),
    });
    expect(await validationErrors(root)).toEqual([
      `k8s/job.yaml:13:22 CronJob sync-db: "\${modules.cache.outputs.deployment-image-tag}": module cache ${noBuild}; ${givesNames('cache')}${hint}`,
      `k8s/job.yaml:13:68 CronJob sync-db: "\${modules.templated.outputs.local-image-id}": module templated ${noBuild}; ` +
        `its image is a template, which tend does not resolve for another module${hint}`,
    ]);
  });

  it('in a templated file, a module the module does not build on is an error at its line (its outputs are not known when it deploys)', async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: local-kubernetes }]'),
      Dockerfile: 'FROM alpine\n',
      'garden.yml': modules.replace('build:\n  dependencies: [fetch]\n', ''),
      'k8s/job.yaml': job('${modules.fetch.outputs.local-image-id}'),
    });
    expect(await validationErrors(root)).toEqual([
      'k8s/job.yaml:13:22 CronJob sync-db: "${modules.fetch.outputs.local-image-id}": deploy.cronjob does not ' +
        "depend on build.fetch, so its outputs are not known when deploy.cronjob runs; add fetch to the module's " +
        'build.dependencies\n  (manifestTemplates and files are templated; list the file under `manifestFiles` ' +
        'to apply it as written, or write `$${` for a literal `${`)',
    ]);
  });

  it('in a templated file, one that names no module or an unknown key is an error at its line', async () => {
    const root = makeProject({
      'project.garden.yml': project('[{ name: local-kubernetes }]'),
      Dockerfile: 'FROM alpine\n',
      'garden.yml': modules,
      'k8s/job.yaml': job(
        '${modules.fetchh.outputs.local-image-id}\n' +
          '              workingDir: ${modules.fetch.buildPath}\n' +
          '              args: ["${actions.build.fetch.outputz.x}", "${actions.build.fetch.sourcepath}"]',
      ),
    });
    expect(await validationErrors(root)).toEqual([
      'k8s/job.yaml:13:22 CronJob sync-db: "${modules.fetchh.outputs.local-image-id}": unknown module "fetchh" ' +
        'in a template expression ("modules.fetchh.outputs.local-image-id" reads the Build the module became, ' +
        `build.fetchh); build actions: build.fetch${hint}`,
      'k8s/job.yaml:14:27 CronJob sync-db: "${modules.fetch.buildPath}": invalid module reference ' +
        '"modules.fetch.buildPath"; expected modules.<name>.outputs.<key> or modules.<name>.version ' +
        `(what tend reads of a module: the Build it became)${hint}`,
      'k8s/job.yaml:15:23 CronJob sync-db: "${actions.build.fetch.outputz.x}": invalid action reference ' +
        '"actions.build.fetch.outputz.x"; expected actions.<kind>.<name>.outputs.<key> (e.g. ' +
        'actions.build.api.outputs.image), or .version, .var.<name>, .name, .disabled, .mode, .buildPath, ' +
        `.sourcePath; did you mean ".outputs"?${hint}`,
      'k8s/job.yaml:15:59 CronJob sync-db: "${actions.build.fetch.sourcepath}": invalid action reference ' +
        '"actions.build.fetch.sourcepath"; expected actions.<kind>.<name>.outputs.<key> (e.g. ' +
        'actions.build.api.outputs.image), or .version, .var.<name>, .name, .disabled, .mode, .buildPath, ' +
        `.sourcePath; did you mean ".sourcePath"?${hint}`,
    ]);
  });
});
