/**
 * One name used twice in a Garden project, as Garden's own test projects write it: two copies of
 * an action of which one is disabled, and what Garden resolves as it does.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import type { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v2
kind: Project
name: twice
environments:
  - name: local
  - name: remote
`;

describe("two copies of an action, one disabled (Garden's disabled-action-with-duplicate-name)", () => {
  const hello = (on: string) => `---
kind: Run
name: hello
type: exec
disabled: "\${environment.name != '${on}'}"
spec:
  command: [echo, ${on}]
`;

  it('validates in each environment with the copy enabled there', async () => {
    const root = makeProject({ 'project.garden.yml': gardenProject + hello('local') + hello('remote') });
    for (const [env, line] of [
      ['local', 8],
      ['remote', 15],
    ] as const) {
      const result = await validateCommand({ root, var: [], env });
      expect(result.data.actions.map(({ ref, file, line }) => `${ref} ${file}:${line}`)).toEqual([
        `run.hello project.garden.yml:${line}`,
      ]);
    }
  });

  it('is an error where both copies are enabled, at the second', async () => {
    const root = makeProject({ 'project.garden.yml': gardenProject + hello('local') + hello('local') });
    const error = await validateCommand({ root, var: [], env: 'local' }).then(
      () => undefined,
      (caught: TendError) => caught,
    );
    expect(`${error?.code} ${error?.location?.file}:${error?.location?.line} ${error?.message}`).toBe(
      'TEND_CONFIG_DUPLICATE_ACTION project.garden.yml:16 duplicate action run.hello: both copies are enabled in environment local; first defined at project.garden.yml:9:7',
    );
  });
});
