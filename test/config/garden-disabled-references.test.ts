/**
 * An enabled action that needs an action the environment disables, as Garden treats it: reading
 * its outputs is refused (Garden fails when it runs the reader: "depends on one or more runtime
 * outputs from action deploy.db, which is disabled"), at the expression, saying it is disabled and
 * where; a `dependencies:` entry naming it is dropped (Garden's tasks skip a disabled dependency).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { TendError } from '../../src/errors.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const projectFile = `apiVersion: garden.io/v1
kind: Project
name: disabled-refs
environments:
  - name: dev
  - name: prod
providers:
  - name: exec
`;

/** Deploy `db`, switched off by `off` (a line), and Deploy `backend` with `backendKeys`. */
const actions = (off: string, backendKeys: string) => `kind: Deploy
name: db
type: exec
${off}
spec:
  deployCommand: ["true"]
---
kind: Deploy
name: backend
type: exec
${backendKeys}`;

async function refusal(root: string): Promise<TendError> {
  const error = await validateCommand({ root, var: [] }).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(TendError);
  return error as TendError;
}

const readsOutputs = `spec:
  deployCommand: ["true"]
  env:
    DB_HOST: \${actions.deploy.db.outputs.host}
`;

describe('an enabled action reading the outputs of a disabled one', () => {
  it('is refused at the expression, saying the action is disabled and where (disabled:)', async () => {
    const root = makeProject({
      'project.garden.yml': projectFile,
      'garden.yml': actions('disabled: true', readsOutputs),
    });
    const error = await refusal(root);
    expect(error.code).toBe('TEND_ACTION_DISABLED');
    expect(error.message).toBe(
      'deploy.backend reads the outputs of deploy.db, which is disabled in environment dev (garden.yml:4:11); ' +
        'enable it there or remove the reference',
    );
    expect(error.location).toMatchObject({ file: 'garden.yml', line: 14 });
  });

  it('names its environments: when that is what leaves the environment out', async () => {
    const root = makeProject({
      'project.garden.yml': projectFile,
      'garden.yml': actions('environments: [prod]', readsOutputs),
    });
    const error = await refusal(root);
    expect(error.message).toBe(
      'deploy.backend reads the outputs of deploy.db, which is disabled in environment dev (garden.yml:4:15); ' +
        'enable it there or remove the reference',
    );
    expect(error.location).toMatchObject({ file: 'garden.yml', line: 14 });
    // Where it is enabled, the reference is a dependency.
    const { data } = await validateCommand({ root, var: [], env: 'prod' });
    expect(data.actions.find((a) => a.ref === 'deploy.backend')?.dependencies).toEqual(['deploy.db']);
  });
  it('in its variables:, at the variable', async () => {
    const root = makeProject({
      'project.garden.yml': projectFile,
      'garden.yml': actions(
        'disabled: true',
        `variables:
  dbHost: \${actions.deploy.db.outputs.host}
spec:
  deployCommand: ["true"]
  env:
    DB_HOST: \${var.dbHost}
`,
      ),
    });
    const error = await refusal(root);
    expect(error.code).toBe('TEND_ACTION_DISABLED');
    expect(error.location).toMatchObject({ file: 'garden.yml', line: 12 });
  });
});

describe('an enabled action whose dependencies: name a disabled one', () => {
  it('validates without it, as Garden drops it, and the note of the disabled action says so', async () => {
    const root = makeProject({
      'project.garden.yml': projectFile,
      'garden.yml': actions(
        'disabled: true',
        'dependencies: [deploy.db]\nspec:\n  deployCommand: ["true"]\n',
      ),
    });
    const { data, exitCode } = await validateCommand({ root, var: [] });
    expect(exitCode).toBe(0);
    expect(data.actions.map((a) => `${a.ref}: ${a.dependencies.join(', ')}`)).toEqual(['deploy.backend: ']);
    expect(data.notes?.map((n) => `${n.file}:${n.line} ${n.message}`)).toEqual([
      'garden.yml:4 deploy.db is disabled in environment dev; not run (deploy.backend runs without it)',
    ]);
  });
});
