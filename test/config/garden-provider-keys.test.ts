/**
 * The keys of a Garden `kubernetes` or `local-kubernetes` provider entry. Garden's kubernetes
 * provider refuses a key it does not have (core/src/plugins/kubernetes/config.ts, `.unknown(false)`):
 * so does tend, at the key's line, naming the closest key (`environment` is `environments`
 * misspelt, and would apply the entry to every environment). Garden's local-kubernetes accepts one
 * (its schema and the base check allow unknown keys, core/src/tasks/resolve-provider.ts): tend
 * accepts it with a note that it is no setting. Garden's settings tend does not use keep their note.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { validateCommand } from '../../src/commands/validate.js';
import { failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

/**
 * A Garden project whose one provider entry (at line 7 with one environment, 8 with two) has
 * `keys` (on the next lines).
 */
const projectWith = (provider: string, keys: string, environments = ['local']) =>
  makeProject({
    'project.garden.yml': `apiVersion: garden.io/v1
kind: Project
name: p
environments:
${environments.map((name) => `  - name: ${name}\n`).join('')}providers:
  - name: ${provider}
${keys}`,
  });

/** What `tend validate` notes: `file:line message`. */
async function validateNotes(root: string): Promise<string[]> {
  const validated = await validateCommand({ root, var: [] });
  expect(validated.exitCode).toBe(0);
  return (validated.data.notes ?? []).map((n) => `${n.file}:${n.line} ${n.message}`);
}

/** What `tend validate` refuses: `code file:line`, and the messages. */
async function validateErrors(root: string, env?: string) {
  const error = await failure(validateCommand({ root, var: [], ...(env ? { env } : {}) }));
  const { errors } = error.detail as {
    errors: { code: string; message: string; location: { file: string; line: number } }[];
  };
  return {
    where: errors.map((e) => `${e.code} ${e.location.file}:${e.location.line}`),
    messages: errors.map((e) => e.message),
  };
}

describe('a key of a Garden kubernetes provider entry', () => {
  it("that Garden's kubernetes provider does not have is an error at its line, naming the closest key", async () => {
    const root = projectWith('kubernetes', '    environment: [local]\n    context: x\n');
    const { where, messages } = await validateErrors(root);
    expect(where).toEqual(['TEND_CONFIG_UNKNOWN_KEY project.garden.yml:8']);
    expect(messages[0]).toMatch(/unknown key "environment" .*did you mean "environments"\?/);
  });

  it('of an entry limited to some environments is an error only in those (Garden checks the providers it uses)', async () => {
    const root = projectWith(
      'kubernetes',
      '    environments: [remote]\n    context: remote-cluster\n    contxt: typo\n',
      ['local', 'remote'],
    );
    expect((await validateCommand({ root, var: [], env: 'local' })).exitCode).toBe(0);
    const { where, messages } = await validateErrors(root, 'remote');
    expect(where).toEqual(['TEND_CONFIG_UNKNOWN_KEY project.garden.yml:11']);
    expect(messages[0]).toMatch(/^unknown key "contxt" in providers\[0\]; did you mean "context"\?/);
  });

  it("that is Garden's own setting tend does not use (or Garden 0.12's) keeps its note", async () => {
    const root = projectWith(
      'kubernetes',
      '    context: x\n    setupIngressController: traefik\n    storage: { builder: { size: 100 } }\n',
    );
    expect(await validateNotes(root)).toEqual([
      "project.garden.yml:9 setupIngressController and storage: Garden's kubernetes provider settings that tend accepts and ignores",
    ]);
  });

  it('of local-kubernetes that Garden accepts but does not know is noted as no setting, with the closest key', async () => {
    const root = projectWith(
      'local-kubernetes',
      '    environment: [local]\n    setupIngressController: traefik\n',
    );
    const notes = await validateNotes(root);
    expect(notes).toHaveLength(2);
    expect(notes[0]).toBe(
      'project.garden.yml:8 environment: not a setting of Garden\'s local-kubernetes provider; did you mean "environments"? ' +
        'Garden accepts unknown keys there and tend ignores it',
    );
    expect(notes[1]).toBe(
      "project.garden.yml:9 setupIngressController: Garden's local-kubernetes provider settings that tend accepts and ignores",
    );
  });
});
