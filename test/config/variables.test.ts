/**
 * Variables through the real CLI: an environment's `varfiles:` and `--var-file`, their order
 * (--var > --var-file > the environment's varfiles > its variables > the project's), a varfile
 * that is missing or malformed, and a `--var` that nothing reads (exit 2, "did you mean").
 * `tend validate --json` shows the namespace, which the variables make up.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

afterEach(removeProjects);

const tendYml = (varfiles: string) => `kind: Project
name: vars
defaultEnvironment: dev
variables: { a: project, b: project, c: project, d: project, e: project }
environments:
  - name: dev
    defaultNamespace: "\${var.a}-\${var.b}-\${var.c}-\${var.d}-\${var.e}"
    variables: { b: env, c: env, d: env, e: env }
    varfiles: ${varfiles}
providers:
  - name: exec
---
kind: Test
type: exec
name: unit
spec:
  command: [sh, -c, "echo \${var.greeting}"]
`;

const namespaceOf = async (root: string, ...args: string[]) => {
  const run = await runTend(['validate', '--json', ...args], { cwd: root });
  expect(run.code, run.stderr + run.stdout).toBe(0);
  return (JSON.parse(run.stdout) as { namespace: string }).namespace;
};

describe('varfiles', () => {
  it('apply in order: --var over --var-file over the varfiles over the variables of tend.yml', async () => {
    const root = makeProject({
      'tend.yml': tendYml('[first.yml, second.json]'),
      'first.yml': 'c: first\nd: first\ne: first\ngreeting: hi\n',
      // JSON is YAML too; a later varfile wins.
      'second.json': '{ "d": "second", "e": "second" }',
      'flag.yml': 'e: flag\n',
    });
    expect(await namespaceOf(root)).toBe('project-env-first-second-second');
    expect(await namespaceOf(root, '--var-file', 'flag.yml')).toBe('project-env-first-second-flag');
    expect(await namespaceOf(root, '--var-file', 'flag.yml', '--var', 'e=cli')).toBe(
      'project-env-first-second-cli',
    );
  });

  it('make tend status find what tend test left, without repeating --var', async () => {
    const root = makeProject({ 'tend.yml': tendYml('[dev.yml]'), 'dev.yml': 'a: alice\ngreeting: hi\n' });
    const test = await runTend(['test', '--json'], { cwd: root });
    expect(test.code, test.stderr).toBe(0);
    const status = await runTend(['status', '--json'], { cwd: root });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      namespace: 'alice-env-env-env-env',
      actions: [{ ref: 'test.unit', state: 'ready' }],
    });
  });

  it('a missing varfile is an error at its entry in tend.yml, unless optional; a missing --var-file too', async () => {
    const root = makeProject({
      'tend.yml': tendYml('[{ path: mine.yml, optional: true }, shared.yml]'),
      'mine.yml': 'a: mine\n',
    });
    const missing = await runTend(['validate'], { cwd: root });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('tend.yml:9:52: varfile shared.yml of environment dev does not exist');
    expect(missing.stderr).toContain('mark it optional');
    writeFileSync(path.join(root, 'shared.yml'), 'greeting: hi\n');
    expect(await namespaceOf(root)).toBe('mine-env-env-env-env');
    writeFileSync(path.join(root, 'tend.yml'), tendYml('[{ path: gone.yml, optional: true }]'));
    expect(await namespaceOf(root, '--var', 'greeting=hi')).toBe('project-env-env-env-env');

    const flag = await runTend(['validate', '--var-file', 'nope.yml'], { cwd: root });
    expect(flag.code).toBe(2);
    expect(flag.stderr).toContain(`--var-file nope.yml: no such file (${path.join(root, 'nope.yml')})`);
  });

  it("a missing varfile is listed with the actions' problems, in one validate", async () => {
    const root = makeProject({
      'tend.yml': tendYml('[shared.yml]').replace('  command: [sh', '  bogus: 1\n  command: [sh'),
    });
    const both = await runTend(['validate', '--json'], { cwd: root });
    expect(both.code).toBe(2);
    const { errors } = (JSON.parse(both.stdout) as { error: { detail: { errors: { message: string }[] } } })
      .error.detail;
    expect(errors.map((e) => e.message)).toEqual([
      expect.stringMatching(
        /^varfile shared.yml of environment dev does not exist .*; create it, or mark it optional/,
      ),
      expect.stringContaining('unknown key "bogus"'),
    ]);
    // A Project document with a problem of its own is not chosen from: its error comes alone.
    writeFileSync(
      path.join(root, 'tend.yml'),
      tendYml('[shared.yml]').replace('name: vars', 'name: vars\nbogus: 1'),
    );
    const project = await runTend(['validate'], { cwd: root });
    expect(project.code).toBe(2);
    expect(project.stderr).toContain('unknown key "bogus"');
    expect(project.stderr).not.toContain('shared.yml');
  });

  it("every action's template problem is listed in one validate, not only the first action's", async () => {
    const root = makeProject({
      'tend.yml': `kind: Project
name: unset
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: unset-dev }]
providers: [{ name: exec }]
variables:
  a: \${local.env.TEND_TEST_UNSET_A}
---
kind: Run
type: exec
name: one
spec:
  command: [echo, "\${var.a}"]
---
kind: Run
type: exec
name: two
spec:
  command: [echo, "\${local.env.TEND_TEST_UNSET_C}"]
`,
    });
    const run = await runTend(['validate'], { cwd: root });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      'tend.yml:13:19: in variable "var.a": environment variable "TEND_TEST_UNSET_A" is not set',
    );
    expect(run.stderr).toContain('tend.yml:19:19: environment variable "TEND_TEST_UNSET_C" is not set');
    expect(run.stderr).toContain('(2 configuration errors)');
  });

  it('a varfile that is not a mapping of names to values: exit 2 at the line and column', async () => {
    // A list is a value (structured variables); a name with a space is not a name.
    const root = makeProject({
      'tend.yml': tendYml('[dev.yml]'),
      'dev.yml': 'greeting: hi\nlist: [1, 2]\nbad name: x\n',
      'two.yml': 'a: x\n---\nb: y\n',
      'list.yml': '- a\n',
    });
    const bad = await runTend(['validate'], { cwd: root });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('dev.yml:3:1: invalid variable name "bad name"');
    writeFileSync(path.join(root, 'dev.yml'), 'greeting: hi\n');
    const two = await runTend(['validate', '--var-file', 'two.yml'], { cwd: root });
    expect(two.code).toBe(2);
    expect(two.stderr).toContain('two.yml:3:1: a varfile holds one YAML document');
    const list = await runTend(['validate', '--var-file', 'list.yml'], { cwd: root });
    expect(list.code).toBe(2);
    expect(list.stderr).toMatch(/list\.yml:1:1: invalid value for varfile list\.yml: expected a mapping/);
  });
});

describe('--var', () => {
  it('naming a variable nothing reads is refused (exit 2) with the closest one it may have meant', async () => {
    const root = makeProject({ 'tend.yml': tendYml('[]'), 'extra.yml': 'only: x\n' });
    const typo = await runTend(['validate', '--var', 'greting=hi'], { cwd: root });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toContain(
      'error: --var greting=hi: no configuration reads variable "greting" (did you mean greeting?)',
    );
    expect(typo.stderr).toContain('read or declare: a, b, c, d, e, greeting');
    // Every command that opens the project refuses it, before it starts anything.
    const status = await runTend(['test', '--var', 'nope=1', '--json'], { cwd: root });
    expect(status.code).toBe(2);
    expect(JSON.parse(status.stdout).error).toMatchObject({
      code: 'TEND_USAGE',
      message: '--var nope=1: no configuration reads variable "nope"',
    });
    // A hostile flag is named cut and escaped, never echoed whole (a lone surrogate reaches tend as U+FFFD).
    const hostile = await runTend(
      ['validate', '--var', `${'x'.repeat(10_000)}=\u001b[2J\ud800${'v'.repeat(10_000)}`, '--json'],
      { cwd: root },
    );
    expect(hostile.code).toBe(2);
    const { message } = JSON.parse(hostile.stdout).error as { message: string };
    expect(message).toBe(
      `--var ${'x'.repeat(64)}…=\\u001b[2J\ufffd${'v'.repeat(59)}…: no configuration reads variable "${'x'.repeat(64)}…"`,
    );
    // A variable read or declared is accepted, and one a varfile sets (a plugin may read it).
    expect(await namespaceOf(root, '--var', 'greeting=hi', '--var', 'a=x')).toBe('x-env-env-env-env');
    expect(
      await namespaceOf(root, '--var-file', 'extra.yml', '--var', 'only=y', '--var', 'greeting=hi'),
    ).toBe('project-env-env-env-env');
  });

  it('is accepted when a manifest of the project reads it (a template in a file a plugin reads)', async () => {
    const root = makeProject({
      'tend.yml': tendYml('[]'),
      'k8s/settings.yaml':
        'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: s }\ndata: { image: "${var.image}" }\n',
      // What tend writes under .tend is not the project's: a reference there reads nothing.
      '.tend/cache/old.json': '{"x": "${var.stale}"}',
    });
    const used = await runTend(['validate', '--var', 'image=nginx', '--var', 'greeting=hi'], { cwd: root });
    expect(used.code, used.stderr).toBe(0);
    const stale = await runTend(['validate', '--var', 'stale=1'], { cwd: root });
    expect(stale.code).toBe(2);
    expect(stale.stderr).toContain('no configuration reads variable "stale"');
  });

  it("with Garden's dotted path sets a key inside a variable of a Garden project (repro: marklester/lesterlab)", async () => {
    const root = makeProject({
      'project.garden.yml': [
        'apiVersion: garden.io/v2',
        'kind: Project',
        'name: dotted',
        'environments: [{ name: local }]',
        'variables: { db: { user: admin } }',
        '---',
        'kind: Run',
        'name: show',
        'type: exec',
        'spec: { command: [echo, "${var.db.user}", "${var.db.password}"] }',
        '',
      ].join('\n'),
    });
    // As for a variable nothing declares: validate notes it, and the Run fails without it.
    const validated = await runTend(['validate'], { cwd: root });
    expect(validated.code, validated.stderr).toBe(0);
    expect(validated.stdout).toContain(
      'run.show reads variable "db.password", which variable "db" does not hold: it runs only when given one (--var db.password=…)',
    );
    const missing = await runTend(['run', 'show'], { cwd: root });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(
      'unknown key "var.db.password"; available: var.db.user; set it with --var db.password=<value>',
    );
    const set = await runTend(['validate', '--var', 'db.password=secret'], { cwd: root });
    expect(set.code, set.stderr).toBe(0);
    // The variable read is db: a path into one nothing reads is refused as a plain name is.
    const unread = await runTend(['validate', '--var', 'cache.size=1'], { cwd: root });
    expect(unread.code).toBe(2);
    expect(unread.stderr).toContain('--var cache.size=1: no configuration reads variable "cache"');
  });
});
