/**
 * The keys of a Garden 0.12 module (`kind: Module`). Garden moves every key that is not a base
 * module key into the module type's spec, whose schema refuses a key it does not have
 * (core/src/config/base.ts prepareModuleResource; container/config.ts, exec/exec.ts,
 * kubernetes-module/config.ts, helm/config.ts): so does tend, at the key's line, naming the closest
 * key; a typo (`servcies`, `task`) would otherwise make services or tasks vanish. So are unknown
 * keys of `build` and of each task and test. A service accepts unknown keys in Garden (its base
 * schema allows them): tend notes them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { readGardenDocument } from '../../src/config/garden/document.js';
import { emptyGardenIndex } from '../../src/config/garden/project-index.js';
import { failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const projectDocument = `apiVersion: garden.io/v0
kind: Project
name: m
environments:
  - name: local
providers:
  - name: local-kubernetes
`;

/** A project whose garden.yml has the module `module` from line 9 on. */
const projectWith = (module: string) =>
  makeProject({ 'garden.yml': `${projectDocument}---\n${module}`, Dockerfile: 'FROM scratch\n' });

/** An exec module "tools" (lines 9 to 11) with `keys` from line 12 on. */
const execModule = (keys: string) => `kind: Module\ntype: exec\nname: tools\n${keys}`;

/** The errors of `tend validate`: `code file:line message`. */
async function validateErrors(module: string): Promise<string[]> {
  const error = await failure(validateCommand({ root: projectWith(module), var: [] }));
  const errors = (
    error.detail as { errors?: { code: string; message: string; location: { file: string; line: number } }[] }
  )?.errors ?? [{ code: error.code, message: error.message, location: error.location! }];
  return errors.map((e) => `${e.code} ${e.location.file}:${e.location.line} ${e.message}`);
}

/** What `tend validate` notes: `file:line message`. */
async function validateNotes(module: string): Promise<string[]> {
  const validated = await validateCommand({ root: projectWith(module), var: [] });
  expect(validated.exitCode).toBe(0);
  return (validated.data.notes ?? []).map((n) => `${n.file}:${n.line} ${n.message}`);
}

describe('a key of a Garden 0.12 module', () => {
  it('that its type does not have is an error at its line, naming the closest key', async () => {
    const errors = await validateErrors(
      execModule(`servcies:
  - name: api
    deployCommand: [echo, hi]
`),
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(
      /^TEND_CONFIG_UNKNOWN_KEY garden\.yml:12 unknown key "servcies" in module tools \(exec\); did you mean "services"\? expected one of: .*\bservices\b/,
    );
  });

  it.each([
    [
      'task on a container module',
      'type: container\nname: api\ntask:\n  - name: migrate\n    command: [migrate]',
      /:12 unknown key "task" .*did you mean "tasks"\?/,
    ],
    [
      'foo on a kubernetes module',
      'type: kubernetes\nname: web\nmanifests: []\nfoo: 1',
      /:13 unknown key "foo" in module web \(kubernetes\); expected one of: /,
    ],
    [
      'valuesFiles on a helm module',
      'type: helm\nname: chart\nchart: nginx\nrepo: https://charts.example.com\nvaluesFiles: [a.yaml]',
      /:14 unknown key "valuesFiles" .*did you mean "valueFiles"\?/,
    ],
  ])('of each converted type is checked against that type: %s', async (_, module, message) => {
    const errors = await validateErrors(`kind: Module\n${module}\n`);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/^TEND_CONFIG_UNKNOWN_KEY garden\.yml/);
    expect(errors[0]).toMatch(message);
  });

  it('of its build, a task or a test that Garden does not have is an error at its line', async () => {
    expect(
      await validateErrors(
        execModule(`build:
  comand: [make]
tasks:
  - name: hello
    command: [echo, hi]
    cacheResults: false
tests:
  - name: unit
    command: [echo, ok]
    description: unit tests
`),
      ),
    ).toEqual([
      expect.stringMatching(
        /^TEND_CONFIG_UNKNOWN_KEY garden\.yml:13 unknown key "comand" in build; did you mean "command"\?/,
      ),
      expect.stringMatching(
        /^TEND_CONFIG_UNKNOWN_KEY garden\.yml:17 unknown key "cacheResults" in tasks\[0\]; /,
      ),
      expect.stringMatching(
        /^TEND_CONFIG_UNKNOWN_KEY garden\.yml:21 unknown key "description" in tests\[0\]; /,
      ),
    ]);
  });

  it('that Garden has (0.12 or later) is accepted', async () => {
    expect(
      await validateNotes(`kind: Module
type: container
name: api
description: the api
allowPublish: false
local: false
extraFlags: [--pull]
platforms: [linux/amd64]
build:
  targetImage: prod
  timeout: 600
services:
  - name: api
    ports: [{ name: http, containerPort: 8080 }]
tasks:
  - name: migrate
    description: migrates
    command: [migrate]
    cacheResult: false
tests:
  - name: unit
    command: [test]
    timeout: 60
`),
    ).toEqual(['garden.yml:13 allowPublish: tend has no publish command; ignored']);
  });

  it("of a service that Garden does not know is noted, as Garden accepts it (a service's schema allows unknown keys)", async () => {
    expect(
      await validateNotes(
        execModule(`services:
  - name: api
    deployCommand: [echo, hi]
    dependecies: [db]
`),
      ),
    ).toEqual([
      'garden.yml:15 dependecies: not a setting of a service of an exec module; did you mean "dependencies"? Garden accepts unknown keys there and tend ignores it',
    ]);
  });

  // Garden 0.12's exec module schema has no hotReload (exec.ts, `.unknown(false)`); its container's has.
  it('hotReload of a module whose type does not have it is its error alone, not also noted as ignored', () => {
    const findings = (type: string) =>
      readGardenDocument(
        { kind: 'Module', type, name: 'tools', hotReload: { sync: [{ target: '/app' }] } },
        { dir: '/nowhere', index: emptyGardenIndex },
      ).flatMap(({ translation }) => [
        ...translation.problems.map((p) => `${p.code} ${p.path.join('.')}`),
        ...translation.notes.map((n) => `note ${n.path.join('.')} ${n.message}`),
      ]);
    expect(findings('exec')).toEqual(['TEND_CONFIG_UNKNOWN_KEY hotReload']);
    expect(findings('container')).toContain(
      'note hotReload hotReload: tend deploys what is on disk; ignored',
    );
  });
});
