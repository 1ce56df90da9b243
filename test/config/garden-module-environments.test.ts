/**
 * `environments:` on a Garden 0.12 `kind: Module`: Garden 0.12 has no such module key and refuses
 * it (the module type's spec schema: `key "environments" is not allowed`); a module is limited to
 * environments with `disabled:` instead. tend refuses it at its line, saying so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const project = (environments: string) => `apiVersion: garden.io/v0
kind: Project
name: m
environments:
  - name: local
  - name: prod
  - name: ci
providers:
  - name: local-kubernetes
---
kind: Module
type: exec
name: tools
environments: ${environments}
tasks:
  - name: hello
    command: [echo, hi]
`;

async function errorOf(environments: string): Promise<string> {
  const root = makeProject({ 'garden.yml': project(environments) });
  const error = await validateCommand({ root, var: [], env: 'local' }).then(
    () => undefined,
    (caught: TendError) => caught,
  );
  return `${error?.code} ${error?.location?.file}:${error?.location?.line}:${error?.location?.column} ${error?.message}`;
}

const refusal = (disabled: string) =>
  'TEND_CONFIG_UNKNOWN_KEY garden.yml:14:1 unknown key "environments" in module tools (exec); expected one of: ' +
  'apiVersion, kind, type, name, build, local, description, disabled, include, exclude, repositoryUrl, ' +
  'allowPublish, generateFiles, variables, varfile, env, services, tasks, tests; ' +
  `limit the module to environments with \`disabled: ${disabled}\``;

describe('environments: on a 0.12 module', () => {
  it('is refused at its line, with the disabled: that limits the module to those environments', async () => {
    expect(await errorOf('[prod]')).toBe(refusal('${environment.name != "prod"}'));
    expect(await errorOf('[prod, ci]')).toBe(
      refusal('${environment.name != "prod" && environment.name != "ci"}'),
    );
  });

  it('of another shape, the hint names the environment as an example', async () => {
    expect(await errorOf('prod')).toBe(refusal('${environment.name != "<environment>"}'));
  });
});
