/**
 * Where exec commands are started (src/plugins/exec/spawner.ts): the same semantics from a Node
 * spawn helper (the default), a Python one (TEND_EXEC_PYTHON) and tend's own process —
 * environment, cwd, process groups, exit codes and signals, `::output` lines, stdout/stderr lines
 * (NUL bytes, invalid UTF-8, no final newline, large output), command not found, timeouts,
 * SIGTERM then SIGKILL, many commands at once — plus what only a helper has: it killed under
 * running commands, no helper outliving tend, and a helper finding tend gone when it gets ready.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../../src/errors.js';
import type { PluginLog } from '../../src/plugin/types.js';
import { runCommand, type CommandResult } from '../../src/plugins/exec/process.js';
import { pythonHelperArgument, pythonHelperSource } from '../../src/plugins/exec/python-spawn-helper.js';
import { encodeSpawn, FrameType, frameHeader, helperSource } from '../../src/plugins/exec/spawn-helper.js';
import { makeProject, removeProjects, startTend, waitFor } from '../helpers/project.js';
import { never, parentOfCommand, programOf } from './exec-helpers.js';

interface Captured {
  log: PluginLog;
  lines: { stream: 'stdout' | 'stderr'; line: string }[];
}

function capture(): Captured {
  const lines: Captured['lines'] = [];
  const log: PluginLog = {
    debug() {},
    info() {},
    warn() {},
    error() {},
    output: (stream, line) => lines.push({ stream, line }),
  };
  return { log, lines };
}

function sh(
  script: string,
  options: { env?: Record<string, string>; timeoutMs?: number; cwd?: string } = {},
) {
  return {
    command: ['sh', '-c', script],
    cwd: options.cwd ?? process.cwd(),
    env: options.env ?? {},
    ...options,
  };
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie is not alive.
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return false;
  }
}

const previous = { helpers: process.env.TEND_EXEC_HELPERS, python: process.env.TEND_EXEC_PYTHON };
afterAll(() => {
  if (previous.helpers === undefined) delete process.env.TEND_EXEC_HELPERS;
  else process.env.TEND_EXEC_HELPERS = previous.helpers;
  if (previous.python === undefined) delete process.env.TEND_EXEC_PYTHON;
  else process.env.TEND_EXEC_PYTHON = previous.python;
  removeProjects();
});

/** The Python a Python spawn helper runs with in these tests. */
const python = '/usr/bin/python3';

/**
 * Helpers of `kind` from now on (Node's unless TEND_EXEC_PYTHON is set); waits until one of them
 * runs a command (they start on demand).
 */
async function useHelpers(kind: 'python' | 'node', count: string): Promise<number> {
  process.env.TEND_EXEC_HELPERS = count;
  if (kind === 'python') process.env.TEND_EXEC_PYTHON = python;
  else delete process.env.TEND_EXEC_PYTHON;
  const program = kind === 'python' ? 'python3' : 'node';
  return waitFor(async () => {
    const parent = await parentOfCommand();
    return parent !== process.pid && programOf(parent) === program && parent;
  }, `a ${kind} spawn helper to run a command`);
}

const helperKinds = [{ kind: 'node' as const }, { kind: 'python' as const }];

describe.each([
  {
    mode: 'a Node spawn helper (the default, though a Python runs here)',
    helpers: '2',
    kind: 'node' as const,
  },
  { mode: 'a Python spawn helper (TEND_EXEC_PYTHON)', helpers: '2', kind: 'python' as const },
  { mode: 'tend itself (TEND_EXEC_HELPERS=0)', helpers: '0', kind: undefined },
])('commands started by $mode', ({ helpers, kind }) => {
  beforeAll(async () => {
    if (kind) {
      await useHelpers(kind, helpers);
      return;
    }
    process.env.TEND_EXEC_HELPERS = helpers;
    expect(await parentOfCommand()).toBe(process.pid);
  });

  it('runs in its cwd with tend’s environment plus its own, in a process group of its own', async () => {
    process.env.TEND_SPAWNER_TEST = 'from tend';
    const dir = makeProject({ 'marker.txt': 'here' });
    const result = await runCommand(
      sh(
        'echo "::output cwd=$(pwd)"; echo "::output marker=$(cat marker.txt)"; ' +
          'echo "::output inherited=$TEND_SPAWNER_TEST"; echo "::output own=$OWN"; ' +
          'echo "::output group=$(ps -o pgid= $$ | tr -d " ")"; echo "::output pid=$$"',
        { cwd: dir, env: { OWN: 'x=y z' } },
      ),
      capture().log,
      new AbortController().signal, // a new run: it reads tend's environment
    );
    delete process.env.TEND_SPAWNER_TEST;
    expect(result.exitCode).toBe(0);
    expect(result.outputs).toMatchObject({
      cwd: dir,
      marker: 'here',
      inherited: 'from tend',
      own: 'x=y z',
    });
    expect(result.outputs.group).toBe(result.outputs.pid);
  });

  it('gives a run’s commands tend’s environment as it was at the run’s first command', async () => {
    const run = new AbortController().signal;
    const seen = async (signal: AbortSignal) =>
      (await runCommand(sh('echo "::output value=$TEND_SPAWNER_RUN"'), capture().log, signal)).outputs.value;
    try {
      process.env.TEND_SPAWNER_RUN = 'first';
      expect(await seen(run)).toBe('first');
      process.env.TEND_SPAWNER_RUN = 'second';
      expect(await seen(run)).toBe('first');
      expect(await seen(new AbortController().signal)).toBe('second');
    } finally {
      delete process.env.TEND_SPAWNER_RUN;
    }
  });

  it('passes a lone surrogate as U+FFFD, as Node encodes it; refuses a NUL byte with a clear error', async () => {
    const out = capture();
    await runCommand(
      {
        command: ['sh', '-c', 'printf %s "$1$X" | od -An -tx1 | tr -d " \\n"', 'sh', 'a\ud800'],
        cwd: process.cwd(),
        env: { X: 'b\udc80' },
      },
      out.log,
      never,
    );
    // a U+FFFD b U+FFFD
    expect(out.lines).toEqual([{ stream: 'stdout', line: '61efbfbd62efbfbd' }]);
    for (const spec of [
      { command: ['echo', 'a\u0000b'], cwd: process.cwd(), env: {} as Record<string, string> },
      { command: ['echo'], cwd: process.cwd(), env: { X: 'a\u0000b' } },
    ]) {
      const error = await runCommand(spec, capture().log, never).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TendError);
      expect(error).toMatchObject({ code: 'TEND_EXEC_FAILED' });
      expect((error as Error).message).toMatch(/null bytes|NUL byte/);
    }
  });

  it('streams stdout and stderr lines with their labels, keeps ::output lines out of them', async () => {
    const out = capture();
    const result = await runCommand(
      sh(
        'echo one; echo two >&2; echo "::output k=v=w"; printf "three\\r\\nfour"; printf "err-no-newline" >&2',
      ),
      out.log,
      never,
    );
    expect(result.outputs).toEqual({ k: 'v=w' });
    expect(out.lines.filter((l) => l.stream === 'stdout').map((l) => l.line)).toEqual([
      'one',
      'three',
      'four',
    ]);
    expect(out.lines.filter((l) => l.stream === 'stderr').map((l) => l.line)).toEqual([
      'two',
      'err-no-newline',
    ]);
    expect(result.tail.split('\n')).toHaveLength(5);
  });

  it('passes NUL bytes through, turns invalid UTF-8 into U+FFFD, joins characters split across writes', async () => {
    const out = capture();
    // "é" is C3 A9: written in two writes with a pause between them, it must arrive whole.
    await runCommand(
      sh(
        "printf 'a\\000b\\n'; printf 'bad \\377\\376 bytes\\n'; printf 'caf\\303'; sleep 0.2; printf '\\251\\n'",
      ),
      out.log,
      never,
    );
    expect(out.lines.map((l) => l.line)).toEqual(['a\u0000b', 'bad \ufffd\ufffd bytes', 'café']);
  });

  it('keeps large output whole and in order', async () => {
    const out = capture();
    // 200,000 numbered lines (about 1.3 MB) on stdout, in bursts larger than a pipe's buffer.
    const result = await runCommand(sh('seq 1 200000'), out.log, never);
    expect(result.exitCode).toBe(0);
    expect(out.lines).toHaveLength(200_000);
    const expected = createHash('sha256');
    for (let i = 1; i <= 200_000; i++) expected.update(`${i}\n`);
    const got = createHash('sha256');
    for (const { line } of out.lines) got.update(`${line}\n`);
    expect(got.digest('hex')).toBe(expected.digest('hex'));
  });

  it('keeps a line longer than any pipe read whole', async () => {
    const out = capture();
    await runCommand(sh("head -c 1000000 /dev/zero | tr '\\000' a; echo; echo after"), out.log, never);
    expect(out.lines.map((l) => l.line.length)).toEqual([1_000_000, 5]);
    expect(out.lines[0]!.line).toMatch(/^a+$/);
  });

  it('reports exit codes, and 128 + n for a command killed by a signal', async () => {
    expect((await runCommand(sh('exit 7'), capture().log, never)).exitCode).toBe(7);
    expect((await runCommand(sh('kill -TERM $$'), capture().log, never)).exitCode).toBe(143);
    expect((await runCommand(sh('kill -KILL $$'), capture().log, never)).exitCode).toBe(137);
    // Any signal, not only the usual four: SIGUSR1 is 10 on Linux.
    expect((await runCommand(sh('kill -USR1 $$'), capture().log, never)).exitCode).toBe(128 + 10);
  });

  it('says "command not found" (and where) for a program that does not exist', async () => {
    const error = await runCommand(
      { command: ['tend-no-such-program'], cwd: '/tmp', env: {} },
      capture().log,
      never,
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TendError);
    expect(error).toMatchObject({
      code: 'TEND_EXEC_FAILED',
      message: 'command not found: tend-no-such-program (cwd /tmp)',
    });
  });

  it('finds a program on the PATH of its own environment, and a relative one from its cwd', async () => {
    const dir = makeProject({
      'bin/tend-tool': '#!/bin/sh\necho "::output tool=first"\n',
      'other/tend-tool': '#!/bin/sh\necho "::output tool=other"\n',
      'run.sh': '#!/bin/sh\necho "::output script=$(pwd)"\n',
      'bin/not-executable': 'echo no\n',
    });
    for (const file of ['bin/tend-tool', 'other/tend-tool', 'run.sh']) chmodSync(path.join(dir, file), 0o755);
    const tool = async (pathValue: string) =>
      (
        await runCommand(
          { command: ['tend-tool'], cwd: dir, env: { PATH: `${pathValue}:${process.env.PATH}` } },
          capture().log,
          never,
        )
      ).outputs.tool;
    const both = `${path.join(dir, 'bin')}:${path.join(dir, 'other')}`;
    expect(await tool(both)).toBe('first');
    // Found before, gone since: the next directory's.
    rmSync(path.join(dir, 'bin/tend-tool'));
    expect(await tool(both)).toBe('other');
    const script = await runCommand({ command: ['./run.sh'], cwd: dir, env: {} }, capture().log, never);
    expect(script.outputs.script).toBe(dir);
    const denied = await runCommand(
      { command: ['not-executable'], cwd: dir, env: { PATH: path.join(dir, 'bin') } },
      capture().log,
      never,
    ).catch((e: unknown) => e);
    expect(denied).toMatchObject({ code: 'TEND_EXEC_FAILED', message: expect.stringMatching(/EACCES/) });
  });

  it('runs in its directory as it is now, also one removed and made again since the last command', async () => {
    const dir = path.join(makeProject({ 'work/marker.txt': 'first' }), 'work');
    const marker = async () =>
      (await runCommand(sh('echo "::output marker=$(cat marker.txt)"', { cwd: dir }), capture().log, never))
        .outputs.marker;
    expect(await marker()).toBe('first');
    rmSync(dir, { recursive: true });
    mkdirSync(dir);
    writeFileSync(path.join(dir, 'marker.txt'), 'second');
    expect(await marker()).toBe('second');
  });

  it('starts a command with no signal ignored or blocked (SIGPIPE included)', async () => {
    const out = capture();
    await runCommand(
      { command: ['grep', '-E', '^Sig(Ign|Blk)', '/proc/self/status'], cwd: '/tmp', env: {} },
      out.log,
      never,
    );
    const masks = Object.fromEntries(out.lines.map(({ line }) => line.split(/:\s+/)));
    // glibc's posix_spawn leaves its own two reserved signals (32 and 33) ignored: no program can use them.
    const glibcReserved = (1n << 31n) | (1n << 32n);
    expect(BigInt(`0x${masks.SigIgn}`) & ~glibcReserved).toBe(0n);
    expect(BigInt(`0x${masks.SigBlk}`)).toBe(0n);
  });

  it('stops a command at its timeout, and what it started with it', async () => {
    const out = capture();
    const error = await runCommand(
      sh('sleep 60 & echo "child $!"; echo "pid $$"; wait', { timeoutMs: 300 }),
      out.log,
      never,
      200,
    ).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'TEND_EXEC_TIMEOUT' });
    expect((error as TendError).message).toMatch(/timed out after 300 ms/);
    const child = Number(out.lines.find((l) => l.line.startsWith('child '))!.line.slice(6));
    await waitFor(() => !alive(child), 'the command’s own child to be stopped');
  });

  it('on abort sends SIGTERM to the group, then SIGKILL after the grace period', async () => {
    const out = capture();
    const controller = new AbortController();
    const running = runCommand(
      sh('trap "echo got TERM" TERM; echo "pid $$"; while :; do sleep 0.05; done'),
      out.log,
      controller.signal,
      300,
    ).catch((e: unknown) => e);
    const pid = await waitFor(
      () => Number(out.lines.find((l) => l.line.startsWith('pid '))?.line.slice(4)),
      'the command to start',
    );
    controller.abort();
    const error = await running;
    expect(error).toMatchObject({ code: 'TEND_INTERRUPTED' });
    // It took SIGTERM (and ignored it), and SIGKILL ended it.
    expect(out.lines.map((l) => l.line)).toContain('got TERM');
    expect(alive(pid)).toBe(false);
  });

  it('an abort before the command reported its pid still stops it', async () => {
    const controller = new AbortController();
    const running = runCommand(sh('sleep 60'), capture().log, controller.signal, 200).catch(
      (e: unknown) => e,
    );
    controller.abort();
    expect(await running).toMatchObject({ code: 'TEND_INTERRUPTED' });
  });

  it('runs many commands at once, each with its own output and exit code', async () => {
    const count = 150;
    const results = await Promise.all(
      Array.from({ length: count }, async (_, i): Promise<[CommandResult, Captured]> => {
        const out = capture();
        const result = await runCommand(
          sh(`echo "line of ${i}"; echo "::output n=${i}"; exit ${i % 5}`),
          out.log,
          new AbortController().signal,
        );
        return [result, out];
      }),
    );
    results.forEach(([result, out], i) => {
      expect(result.exitCode).toBe(i % 5);
      expect(result.outputs).toEqual({ n: String(i) });
      expect(out.lines).toEqual([{ stream: 'stdout', line: `line of ${i}` }]);
    });
  });
});

describe.each(helperKinds)('a $kind spawn helper that dies', ({ kind }) => {
  it('fails the commands it was running (their groups killed), and new commands still run', async () => {
    await useHelpers(kind, '1');
    const outs = [capture(), capture()];
    const running = outs.map((out) =>
      runCommand(sh('echo "pid $$ ppid $PPID"; sleep 60'), out.log, never).catch((e: unknown) => e),
    );
    const pids = await Promise.all(
      outs.map((out) =>
        waitFor(() => out.lines.find((l) => l.line.startsWith('pid '))?.line, 'the command to start'),
      ),
    );
    const parents = [...new Set(pids.map((line) => Number(line.split(' ')[3])))];
    expect(parents).not.toContain(process.pid);
    for (const helper of parents) process.kill(helper, 'SIGKILL');
    for (const error of await Promise.all(running)) {
      expect(error).toBeInstanceOf(TendError);
      expect(error).toMatchObject({ code: 'TEND_EXEC_FAILED' });
      expect((error as TendError).message).toMatch(
        /spawn helper \(pid \d+\) was killed \(SIGKILL\) while sh was running; its process group was killed/,
      );
    }
    for (const line of pids) {
      const pid = Number(line.split(' ')[1]);
      await waitFor(() => !alive(pid), 'the command of the dead helper to be killed');
    }
    // The next commands run, in a new helper.
    const next = await runCommand(sh('echo "::output ok=yes"'), capture().log, never);
    expect(next.outputs).toEqual({ ok: 'yes' });
    const replacement = await waitFor(async () => {
      const parent = await parentOfCommand();
      return parent !== process.pid && parent;
    }, 'a new spawn helper to run a command');
    expect(parents).not.toContain(replacement);
  });
});

describe.each(helperKinds)('no $kind spawn helper outlives tend', ({ kind }) => {
  const env = { TEND_EXEC_PYTHON: kind === 'python' ? python : '' };
  const program = kind === 'python' ? 'python3' : 'node';
  // A chain of builds, started by spawn helpers.
  // The last one ignores SIGTERM (from before it says it started) and never ends: only SIGKILL
  // (a second Ctrl-C, or its helper) stops it.
  const stubborn = 'trap "" TERM; ';
  const forever = '; while :; do sleep 0.1; done';
  const builds = Array.from(
    { length: 12 },
    (_, i) => `kind: Build
type: exec
name: b${i}
exclude: ['*.txt']
${i > 0 ? `dependencies: [build.b${i - 1}]\n` : ''}spec: { command: [sh, -c, '${i === 11 ? stubborn : ''}echo $PPID > parent-${i}.txt; echo $$ > pid-${i}.txt; sleep 0.05${i === 11 ? forever : ''}'] }
`,
  );
  const tendYml = `kind: Project
name: spawner
defaultEnvironment: dev
environments: [{ name: dev, defaultNamespace: spawner-dev }]
providers: [{ name: exec }]
---
${builds.join('---\n')}`;

  /** The helper pids that ran the project's commands (parents other than tend). */
  function helperPids(root: string, tendPid: number): number[] {
    const parents = builds.map((_, i) => Number(readFileSync(path.join(root, `parent-${i}.txt`), 'utf8')));
    return [...new Set(parents.filter((p) => p !== tendPid))];
  }

  it('tend exiting (a second Ctrl-C) or killed (SIGKILL): its helper exits and kills what it ran', async () => {
    for (const how of ['second Ctrl-C', 'SIGKILL'] as const) {
      const root = makeProject({ 'tend.yml': tendYml });
      const tend = startTend(['build'], { cwd: root, env });
      const lastPid = path.join(root, 'pid-11.txt');
      const last = await waitFor(
        () => existsSync(lastPid) && Number(readFileSync(lastPid, 'utf8')),
        'the last build to start',
        30_000,
      );
      const spawners = helperPids(root, tend.pid);
      expect(spawners.length).toBeGreaterThan(0);
      expect(spawners.map(programOf)).toEqual(spawners.map(() => program));
      // The last build runs in a helper: tend killed cannot kill it, its helper must.
      expect(spawners).toContain(Number(readFileSync(path.join(root, 'parent-11.txt'), 'utf8')));
      if (how === 'SIGKILL') tend.signal('SIGKILL');
      else {
        tend.signal('SIGINT');
        await tend.waitForOutput(/stopping started processes/, 'the first Ctrl-C to be taken');
        tend.signal('SIGINT');
      }
      const run = await tend.exited;
      if (how === 'SIGKILL') expect(run.signal).toBe('SIGKILL');
      else expect(run.code).toBe(130);
      for (const pid of spawners) await waitFor(() => !alive(pid), `the spawn helper to exit after ${how}`);
      await waitFor(() => !alive(last), `the running build to be killed after ${how}`);
    }
  });

  it('a tend that finishes leaves no helper behind', async () => {
    const root = makeProject({ 'tend.yml': tendYml.replace(stubborn, '').replace(forever, '') });
    const tend = startTend(['build'], { cwd: root, env });
    const run = await tend.exited;
    expect(run.code, run.stderr).toBe(0);
    const spawners = helperPids(root, tend.pid);
    expect(spawners.length).toBeGreaterThan(0);
    for (const pid of spawners) await waitFor(() => !alive(pid), 'the spawn helper to exit');
  });
});

describe('the Node spawn helper', () => {
  it('finding tend gone when it gets ready: exits without a word or a request read', async () => {
    const dir = makeProject({});
    const ran = path.join(dir, 'ran.txt');
    // The helper starts once the shell has read the gate line; by then its stdout's reader is closed.
    const helper = spawn(
      '/bin/sh',
      ['-c', 'read gate && exec "$0" -e "$1"', process.execPath, helperSource],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    helper.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => helper.once('close', resolve));
    await new Promise((resolve) => helper.stdout.once('close', resolve).destroy());
    const request = encodeSpawn({ file: '/bin/sh', cwd: dir, args: ['-c', `echo ran > '${ran}'`], env: {} });
    // The gate, then a request; stdin stays open (its end alone would stop the helper).
    helper.stdin.write(
      Buffer.concat([Buffer.from('go\n'), frameHeader(FrameType.spawn, 1, request.length), request]),
    );
    expect(await exited).toBe(0);
    expect(stderr).toBe('');
    expect(existsSync(ran)).toBe(false);
    helper.stdin.destroy();
  });
});

describe('the Python spawn helper', () => {
  it('finding tend gone when it gets ready (Ctrl-C twice meanwhile): exits without a word or a request read', async () => {
    // A Python that waits for a gate before it starts: the helper gets ready only after tend is gone.
    const root = makeProject({
      'tend.yml':
        'kind: Project\nname: gone\ndefaultEnvironment: dev\nenvironments: [{ name: dev, defaultNamespace: gone-dev }]\n' +
        'providers: [{ name: exec }]\n---\nkind: Build\ntype: exec\nname: only\nexclude: [ran.txt]\n' +
        'spec: { command: [sh, -c, "echo ran > ran.txt"] }\n',
    });
    const gatedPython = path.join(root, 'gated-python');
    writeFileSync(
      gatedPython,
      `#!/bin/sh\necho $$ > '${root}/helper.pid'\nwhile [ ! -e '${root}/gate' ]; do sleep 0.01; done\nexec ${python} "$@"\n`,
    );
    chmodSync(gatedPython, 0o755);
    const tend = startTend(['build'], {
      cwd: root,
      env: { TEND_EXEC_PYTHON: gatedPython, TEND_EXEC_HELPERS: '1' },
    });
    const pidFile = path.join(root, 'helper.pid');
    const helper = await waitFor(
      () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8')),
      'the helper to be started',
    );
    await tend.waitForOutput(/processing\s+build\.only/, 'the build to be queued to the helper');
    tend.signal('SIGINT');
    await tend.waitForOutput(/stopping started processes/, 'the first Ctrl-C to be taken');
    tend.signal('SIGINT');
    await waitFor(() => !alive(tend.pid), 'tend to exit');
    writeFileSync(path.join(root, 'gate'), '');
    // Resolves once the helper, which shares tend's stderr, has closed it too.
    const run = await tend.exited;
    expect(run.code).toBe(130);
    expect(run.stderr).not.toMatch(/Traceback|BrokenPipe|EPIPE/);
    await waitFor(() => !alive(helper), 'the helper to exit');
    expect(existsSync(path.join(root, 'ran.txt'))).toBe(false);
  });

  it('starts on modules that load fast: no json, re, enum, selectors or collections before it is ready', async () => {
    // -X importtime lists on stderr every module imported, as "import time: self | total | name".
    const helper = spawn(
      python,
      ['-X', 'importtime', '-I', '-S', '-c', pythonHelperSource, pythonHelperArgument],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let stderr = '';
    helper.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise((resolve) => helper.once('close', resolve));
    const ready = await new Promise<Buffer>((resolve) => helper.stdout.once('data', resolve));
    expect(ready.readUInt8(4)).toBe(FrameType.ready);
    helper.stdin.end();
    await exited;
    const modules = stderr
      .split('\n')
      .map((line) => line.split('|')[2]?.trim())
      .filter(Boolean);
    expect(modules).toContain('os');
    for (const slow of ['json', 're', 'enum', 'selectors', 'collections'])
      expect(modules).not.toContain(slow);
  });
});
