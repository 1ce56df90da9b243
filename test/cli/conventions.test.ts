/**
 * kubectl's conventions, through the real CLI: global `--kubeconfig`/`--context` over the
 * provider's, `tend completion`, no escape codes for `TERM=dumb`/`NO_COLOR`, the global flags in
 * every subcommand's help, and exit codes as docs/errors.md says.
 */
import { execFile, spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { makeProject, removeProjects, runTend, tendBin } from '../helpers/project.js';
import { projectYaml, startSim, type SimHandle } from '../plugins/kubernetes/helpers.js';

const run = promisify(execFile);
afterEach(removeProjects);

/** Runs bash's completion function for the words of a command line; the last word is completed. */
async function complete(script: string, words: string[]): Promise<string[]> {
  const file = path.join(makeProject({ 'tend.bash': script }), 'tend.bash');
  const array = words.map((w) => `'${w}'`).join(' ');
  const { stdout } = await run('bash', [
    '-c',
    `source ${file}; COMP_WORDS=(${array}); COMP_CWORD=${words.length - 1}; _tend; printf '%s\\n' "\${COMPREPLY[@]}"`,
  ]);
  return stdout.split('\n').filter(Boolean);
}

describe('tend completion', () => {
  it('bash: the script sources cleanly and completes commands, subcommands, flags and values', async () => {
    const out = await runTend(['completion', 'bash']);
    expect(out.code, out.stderr).toBe(0);
    const script = out.stdout;
    expect(await complete(script, ['tend', 'dep'])).toEqual(['deploy']);
    const cleanup = await complete(script, ['tend', 'cleanup', '']);
    expect(cleanup).toEqual(
      expect.arrayContaining(['env', 'deploy', 'plan', 'enforce', 'halt', 'unhalt', 'breaker']),
    );
    expect(cleanup).not.toContain('resume'); // the deprecated name still works, but is not offered
    expect(await complete(script, ['tend', 'deploy', '--fo'])).toEqual(['--force', '--force-build']);
    expect(await complete(script, ['tend', 'build', '--fo'])).toEqual(['--force']);
    // A global flag's value is skipped on the way to the command.
    expect(await complete(script, ['tend', '--env', 'dev', 'cleanup', 'pl'])).toEqual(['plan']);
    expect(await complete(script, ['tend', '--kube'])).toEqual(['--kubeconfig']);
    expect(await complete(script, ['tend', 'server', 'token', 'cr'])).toEqual(['create']);
    expect(await complete(script, ['tend', 'envs', '--pro'])).toEqual(['--project']);
    expect(await complete(script, ['tend', 'completion', ''])).toEqual(['bash', 'zsh', 'fish']);
    // No completion after a flag that takes a value (but files for --root).
    expect(await complete(script, ['tend', '--env', ''])).toEqual([]);
  });

  it('zsh loads the same completion through bashcompinit; fish gets complete lines per command', async () => {
    const zsh = await runTend(['completion', 'zsh']);
    expect(zsh.code).toBe(0);
    expect(zsh.stdout).toMatch(/^#compdef tend\n/);
    expect(zsh.stdout).toContain('bashcompinit');
    expect(zsh.stdout).toContain('complete -F _tend tend');
    const fish = await runTend(['completion', 'fish']);
    expect(fish.code).toBe(0);
    expect(fish.stdout).toContain("complete -c tend -n '__fish_use_subcommand' -a 'deploy'");
    expect(fish.stdout).toMatch(/complete -c tend -n '__fish_seen_subcommand_from deploy' -l force/);
    expect(fish.stdout).toMatch(/complete -c tend -n 'true' -l kubeconfig -r/);
  });

  it('an unknown shell is a usage error (exit 2)', async () => {
    const out = await runTend(['completion', 'powershell']);
    expect(out.code).toBe(2);
    expect(out.stderr).toMatch(/Allowed choices are bash, zsh, fish/);
  });
});

describe('help', () => {
  it('tend --help wraps each command’s description only where the line is full (80 columns)', async () => {
    const out = await runTend(['--help']);
    expect(out.code).toBe(0);
    const section = out.stdout.slice(out.stdout.indexOf('Commands:'), out.stdout.indexOf('\nExamples:'));
    const lines = section.split('\n').slice(1);
    const column = /^( {2}\S.*?\s{2,})\S/.exec(lines[0]!)?.[1]?.length ?? 0;
    expect(column).toBeGreaterThan(0);
    for (let i = 0; i + 1 < lines.length; i++) {
      const next = lines[i + 1]!;
      // A continuation line: the next word would not have fit on this one.
      if (next.length > column && next.slice(0, column).trim() === '') {
        const word = next.slice(column).split(' ')[0]!;
        expect(lines[i]!.length + 1 + word.length, `${lines[i]}\n${next}`).toBeGreaterThan(80);
      }
    }
    expect(section.replace(/\s+/g, ' ')).toContain(
      'or print one (a session id, or `latest`: the newest that was not a read-only tend status or tend logs); `events push`',
    );
  });

  it('every subcommand’s --help lists the global flags', async () => {
    // Walk the command tree the way a user would: each help's "Commands:" section.
    const seen: string[] = [];
    const walk = async (at: string[]): Promise<void> => {
      const out = await runTend([...at, '--help']);
      expect(out.code, at.join(' ')).toBe(0);
      if (at.length > 0) {
        seen.push(at.join(' '));
        const globals = out.stdout.slice(out.stdout.indexOf('Global Options:'));
        for (const flag of ['--root', '--env', '--var', '--json', '--debug', '--kubeconfig', '--context'])
          expect(globals, `${at.join(' ')} --help`).toContain(flag);
      }
      const commands = out.stdout.split(/\nCommands:\n/)[1]?.split('\n\n')[0] ?? '';
      for (const line of commands.split('\n')) {
        const name = /^ {2}([a-z][a-z-]*)/.exec(line)?.[1];
        if (name && name !== 'help') await walk([...at, name]);
      }
    };
    await walk([]);
    expect(seen).toEqual(
      expect.arrayContaining(['deploy', 'cleanup env', 'server token create', 'completion']),
    );
  }, 180_000);
});

/** Runs tend under a pseudo-terminal (util-linux `script`), so stderr is a TTY. */
function onTerminal(args: string[], cwd: string, env: Record<string, string | undefined>): Promise<string> {
  return new Promise((resolve, reject) => {
    const command = [process.execPath, tendBin, ...args].map((a) => `'${a}'`).join(' ');
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env };
    delete childEnv.CI;
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
    const child = spawn('script', ['-qec', command, '/dev/null'], { cwd, env: childEnv });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', reject);
    child.on('close', () => resolve(out));
  });
}

describe('plain output', () => {
  const execProject = () =>
    makeProject({
      'tend.yml': `kind: Project
name: plain
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: plain-dev }]
providers: [{ name: exec }]
---
kind: Build
type: exec
name: a
spec: { command: ["true"] }
`,
    });

  it('on a terminal progress redraws with escape codes; TERM=dumb and NO_COLOR print none', async () => {
    const root = execProject();
    const fancy = await onTerminal(['build', '--force'], root, { TERM: 'xterm', NO_COLOR: undefined });
    expect(fancy).toContain('build.a');
    expect(fancy).toContain('\x1b[');
    for (const env of [
      { TERM: 'dumb', NO_COLOR: undefined },
      { TERM: 'xterm', NO_COLOR: '1' },
    ]) {
      const plain = await onTerminal(['build', '--force'], root, env);
      expect(plain, JSON.stringify(env)).toMatch(/ready +build\.a/);
      expect(plain, JSON.stringify(env)).not.toContain('\x1b');
    }
  });
});

describe('exit codes', () => {
  it('tend envs without a server and without a token: both configuration errors, exit 2', async () => {
    const home = makeProject({});
    const env = { HOME: home, TEND_CONFIG_DIR: path.join(home, 'tend'), TEND_SERVER_URL: '', TEND_TOKEN: '' };
    const none = await runTend(['envs', '--json'], { cwd: home, env });
    expect(none.code).toBe(2);
    expect(JSON.parse(none.stdout).error.code).toBe('TEND_SERVER_NOT_CONFIGURED');
    const noToken = await runTend(['envs', '--json'], {
      cwd: home,
      env: { ...env, TEND_SERVER_URL: 'http://127.0.0.1:9' },
    });
    expect(noToken.code).toBe(2);
    expect(JSON.parse(noToken.stdout).error.code).toBe('TEND_AUTH');
  });
});

describe('--kubeconfig and --context', () => {
  let h: SimHandle;
  beforeAll(async () => {
    h = await startSim();
  });
  afterAll(async () => h?.stop());

  it('override KUBECONFIG and the provider’s context: for every call of the command', async () => {
    // A kubeconfig whose current context and the provider's context point nowhere; kube-sim's
    // context is only reachable by naming it.
    const config = parse(readFileSync(h.kubeconfig, 'utf8')) as {
      clusters: { name: string; cluster: Record<string, unknown> }[];
      contexts: { name: string; context: Record<string, unknown> }[];
      'current-context': string;
    };
    config.clusters.push({ name: 'nowhere', cluster: { server: 'https://127.0.0.1:9' } });
    config.contexts.push({ name: 'nowhere', context: { cluster: 'nowhere', user: 'kube-sim' } });
    config['current-context'] = 'nowhere';
    const root = makeProject({
      'tend.yml': projectYaml({
        registry: h.sim.registryHost,
        namespace: 'flags-dev',
        project: 'flags',
      }).replace('context: kube-sim', 'context: nowhere'),
    });
    const file = path.join(root, 'other-kubeconfig');
    writeFileSync(file, stringify(config));
    const env = { KUBECONFIG: path.join(root, 'missing') };
    const without = await runTend(['status'], { cwd: root, env });
    expect(without.code).not.toBe(0);

    const status = await runTend(['status', '--json', '--kubeconfig', file, '--context', 'kube-sim'], {
      cwd: root,
      env,
    });
    expect(status.code, status.stderr).toBe(0);
    const prepared = await runTend(['--kubeconfig', file, '--context', 'kube-sim', 'build'], {
      cwd: root,
      env,
    });
    expect(prepared.code, prepared.stderr).toBe(0);
    expect(h.sim.store.get('namespaces', '', 'flags-dev')?.metadata.annotations?.['tend.dev/project']).toBe(
      'flags',
    );
    // The provider's context alone, from that file, is the unreachable one.
    const providers = await runTend(['status', '--kubeconfig', file], { cwd: root, env });
    expect(providers.code).toBe(1);
    expect(providers.stderr + providers.stdout).toMatch(/127\.0\.0\.1:9/);

    const twice = await runTend(['status', '--context', 'a', '--context', 'b'], { cwd: root, env });
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/--context names one kubeconfig context/);
  });
});

describe('a kubeconfig context that does not exist', () => {
  const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{ name: a, cluster: { server: "https://127.0.0.1:9" } }]
contexts:
  - { name: kind-a, context: { cluster: a, user: u } }
  - { name: kind-b, context: { cluster: a, user: u } }
current-context: kind-a
users: [{ name: u, user: { token: x } }]
`;
  const project = (context: string) =>
    makeProject({
      kubeconfig,
      'tend.yml': `kind: Project
name: contexts
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: contexts-dev }]
providers: [{ name: kubernetes, context: ${context}, deploymentRegistry: localhost:5000/x }]
`,
    });

  it('from --context: the hint names the flag; the message lists the contexts there are', async () => {
    const root = project('kind-a');
    const env = { KUBECONFIG: path.join(root, 'kubeconfig') };
    const run = await runTend(['status', '--context', 'kind-c'], { cwd: root, env });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('kubeconfig context "kind-c" not found');
    expect(run.stderr).toContain('available: kind-a, kind-b');
    expect(run.stderr).toContain(
      '"kind-c" came from --context: pass --context one of the available contexts',
    );
    expect(run.stderr).not.toContain('tend.yml');
    const json = await runTend(['status', '--context', 'kind-c', '--json'], { cwd: root, env });
    expect(JSON.parse(json.stdout).error.detail.hint).toMatch(/^"kind-c" came from --context/);
  });

  it("from the provider's context: the hint names the provider entry", async () => {
    const root = project('kind-c');
    const run = await runTend(['status'], { cwd: root, env: { KUBECONFIG: path.join(root, 'kubeconfig') } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("set `context:` of the kubernetes provider (the Project's providers:)");
  });
});
