/**
 * A key missing inside a declared variable (`${var.creds.user}` where `creds: { user:
 * ${local.env.REPRO_USER}? }` and the environment variable is unset, as frizzr/garden-debug sets
 * it only in CI), read by an action's spec: as for a variable nothing declares, `tend validate`
 * notes it (Garden's validate does not resolve specs), and the action fails only when it runs
 * without the value. Where an undeclared variable is an error before anything runs, so is it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { configureAt, configureError, describedError, failure } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v1
kind: Project
name: keys
environments: [{ name: dev }]
---
kind: Run
name: login
type: exec
variables:
  creds:
    user: \${local.env.TEND_TEST_UNSET_USER}?
`;

describe('a key missing inside a declared variable', () => {
  it("read by a spec: validate's check gives a note naming the dotted key; running it is the error", async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject + 'spec:\n  command: [echo, "${var.creds.user}"]\n',
    });
    const configuration = await configureAt(root);
    const notes = await configuration.check();
    expect(notes.map((n) => `${n.location.file}:${n.location.line} ${n.message}`)).toEqual([
      'project.garden.yml:13 run.login reads variable "creds.user", which variable "creds" does not hold: ' +
        'it runs only when given one (--var creds.user=…)',
    ]);
    const action = configuration.actions.find((a) => a.ref === 'run.login')!;
    const error = await failure(
      Promise.resolve().then(() => configuration.resolveSpec(action, { keepActionOutputs: false })),
    );
    expect(describedError(error)).toBe(
      'TEND_TEMPLATE project.garden.yml:13 unknown key "var.creds.user"; available: (none); ' +
        'set it with --var creds.user=<value>',
    );
    expect(await (await configureAt(root, ['creds.user=bob'])).check()).toEqual([]);
  });

  it('read where an undeclared variable is an error before anything runs (include), it is one', async () => {
    const root = makeProject({
      'project.garden.yml': gardenProject + 'include: ["${var.creds.user}"]\nspec:\n  command: [echo]\n',
    });
    expect(describedError(await configureError(root))).toBe(
      'TEND_TEMPLATE project.garden.yml:12 unknown key "var.creds.user"; available: (none); ' +
        'set it with --var creds.user=<value>',
    );
  });
});
