/**
 * An action's `timeout:` written as a template (`timeout: ${var.timeout}`), and a 0.12 module's
 * services', tasks' and tests' (Garden's own e2e.garden.yml): resolved in the chosen environment
 * with the action's variables, as Garden resolves its built-in keys before checking them; a value
 * that is no duration then is an error at the `timeout:` line, the module entry's too. A number
 * written as text is seconds, templated or not, as Garden's Joi schema converts it.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { configure } from '../../src/config/pipeline.js';
import { builtinPlugins } from '../../src/plugins/builtin.js';
import { configureAt, configureError, describedError } from '../helpers/configure.js';
import { makeProject, removeProjects } from '../helpers/project.js';

afterEach(removeProjects);

const gardenProject = `apiVersion: garden.io/v1
kind: Project
name: timeouts
environments:
  - name: local
  - name: ci
    variables: { timeout: 20m }
providers: [{ name: local-kubernetes }]
variables:
  timeout: 360
  later: soon
`;

/** The project with an exec Run `r` (its `timeout:` at line 16) that has `timeout`. */
const runWith = (timeout: string) =>
  gardenProject + `---\nkind: Run\ntype: exec\nname: r\ntimeout: ${timeout}\nspec: { command: [echo, hi] }\n`;

/** A 0.12 exec module whose service `s`, task `k` and test `t` have `timeout`. */
const moduleWith = (timeout: string) => `---
kind: Module
name: e2e
type: exec
services:
  - name: s
    deployCommand: [echo, hi]
    timeout: ${timeout}
tasks:
  - name: k
    command: [echo, hi]
    timeout: ${timeout}
tests:
  - name: t
    command: [echo, hi]
    timeout: ${timeout}
`;

const timeoutsOf = async (root: string, vars: string[] = []) =>
  Object.fromEntries((await configureAt(root, vars)).actions.map((a) => [a.ref, a.timeout]));

describe('templated timeout', () => {
  // `own` is text: seconds as text are seconds, as Garden's schema converts them.
  it("an action's: resolved with the project's, the environment's and its own variables", async () => {
    const root = makeProject({
      'project.garden.yml':
        gardenProject +
        `---
kind: Test
type: exec
name: t
timeout: \${var.timeout}
spec: { command: [echo, hi] }
---
kind: Run
type: exec
name: r
variables: { own: "45" }
timeout: \${var.own}
spec: { command: [echo, hi] }
`,
    });
    expect(await timeoutsOf(root)).toEqual({ 'test.t': 360_000, 'run.r': 45_000 });
    const inCi = await configure({
      cwd: root,
      plugins: builtinPlugins(),
      env: 'ci',
      secrets: () => Promise.resolve(undefined),
    });
    expect(inCi.actions.find((a) => a.ref === 'test.t')!.timeout).toBe(1_200_000);
    expect((await timeoutsOf(root, ['timeout=90']))['test.t']).toBe(90_000);
  });

  it("a 0.12 module's services, tasks and tests", async () => {
    const root = makeProject({ 'project.garden.yml': gardenProject + moduleWith('${var.timeout}') });
    expect(await timeoutsOf(root)).toEqual({
      'deploy.s': 360_000,
      'run.k': 360_000,
      'test.e2e-t': 360_000,
    });
  });

  it("a value that is no duration once resolved is an error at the action's timeout: line", async () => {
    const root = makeProject({
      'project.garden.yml':
        gardenProject +
        '---\nkind: Test\ntype: exec\nname: t\ntimeout: ${var.later}\nspec: { command: [echo] }\n',
    });
    expect(describedError(await configureError(root))).toBe(
      'TEND_CONFIG_INVALID project.garden.yml:16 timeout "${var.later}" of test.t resolves to "soon"; ' +
        'expected a duration: seconds as a number, or a whole number followed by ms, s, m or h',
    );
  });

  it("a module entry's timeout, templated or not, is checked at its own line", async () => {
    const module = (timeout: string) =>
      gardenProject +
      `---
kind: Module
name: e2e
type: exec
tests:
  - name: t
    command: [echo, hi]
    timeout: ${timeout}
`;
    const templated = makeProject({ 'project.garden.yml': module('${var.later}') });
    expect(describedError(await configureError(templated))).toBe(
      'TEND_CONFIG_INVALID project.garden.yml:19 timeout "${var.later}" of test.e2e-t resolves to "soon"; ' +
        'expected a duration: seconds as a number, or a whole number followed by ms, s, m or h',
    );
    const written = makeProject({ 'project.garden.yml': module('5 minutes') });
    expect(describedError(await configureError(written))).toMatch(
      /^TEND_CONFIG_INVALID project.garden.yml:19 invalid value for tests\[0\]\.timeout: expected a duration/,
    );
  });

  it("a number written as text is seconds, as Garden's schema converts it; other text is refused at its line", async () => {
    const root = makeProject({
      'project.garden.yml': runWith('" 9e1 "') + moduleWith('"90"'),
    });
    expect(await timeoutsOf(root)).toEqual({
      'run.r': 90_000,
      'deploy.s': 90_000,
      'run.k': 90_000,
      'test.e2e-t': 90_000,
    });
    // Joi's rules: no hex, nor a number too large to hold.
    for (const text of ['0x10', '1e400']) {
      const refused = makeProject({ 'project.garden.yml': runWith(`"${text}"`) });
      expect(describedError(await configureError(refused))).toMatch(
        /^TEND_CONFIG_INVALID project.garden.yml:16 invalid value for timeout: expected a duration/,
      );
    }
  });

  it('a template reading another action is an error at its line when the configuration loads', async () => {
    const root = makeProject({
      'project.garden.yml':
        gardenProject +
        '---\nkind: Test\ntype: exec\nname: t\ntimeout: ${actions.run.r.outputs.log}\nspec: { command: [echo] }\n' +
        '---\nkind: Run\ntype: exec\nname: r\nspec: { command: [echo] }\n',
    });
    expect(describedError(await configureError(root))).toMatch(
      /^TEND_CONFIG_INVALID project.garden.yml:16 timeout of test.t reads "actions.run.r.outputs.log": timeout is resolved before any action runs/,
    );
  });
});
