/**
 * A URL given with user info (`http://user:password@host`) never has its password printed: the
 * redaction itself, and the real CLI's output for `tend login`, `tend events outbox|push` and a
 * streaming command, with and without --json and --debug.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { redactUrl, redactUrlsIn } from '../src/redact.js';
import { freePort, makeProject, removeProjects, runTend } from './helpers/project.js';
import { busyProject, streamEnv } from './stream/helpers.js';

afterEach(removeProjects);

const secret = 's3cret-pw';

describe('redactUrl', () => {
  it('replaces user info with *** and keeps the rest', () => {
    expect(redactUrl(`http://user:${secret}@host:7420/`)).toBe('http://***@host:7420');
    expect(redactUrl(`https://${secret}@host/base`)).toBe('https://***@host/base');
    expect(redactUrl('http://host:7420/')).toBe('http://host:7420');
    expect(redactUrl(`postgres://tend:${secret}@db:5432/tend`)).toBe('postgres://***@db:5432/tend');
  });

  it('redacts what is not a valid URL up to the last "@"', () => {
    expect(redactUrl(`http://user:${secret} x@host`)).toBe('http://***@host');
    expect(redactUrl(`user:${secret}@host`)).toBe('***@host');
    expect(redactUrl('not a url')).toBe('not a url');
  });

  it('redacts every URL inside a message', () => {
    expect(redactUrlsIn(`cannot fetch http://u:${secret}@a/x and https://b:${secret}@c`)).toBe(
      'cannot fetch http://***@a/x and https://***@c',
    );
  });
});

describe('the CLI never prints the password of a server URL', () => {
  it('tend login, with and without --json, --debug and --no-verify', async () => {
    const port = await freePort();
    const server = `http://user:${secret}@127.0.0.1:${port}`;
    const env = { TEND_CONFIG_DIR: makeProject({}) };
    for (const extra of [[], ['--json'], ['--debug'], ['--no-verify'], ['--no-verify', '--json']]) {
      const run = await runTend(['login', '--server', server, '--token', 'tok', ...extra], { env });
      expect(run.stdout + run.stderr).not.toContain(secret);
      expect(run.stdout + run.stderr).toContain(`http://***@127.0.0.1:${port}`);
    }
    const bad = await runTend(['login', '--server', `ftp://user:${secret}@host`, '--token', 'tok'], { env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).not.toContain(secret);
  });

  it('tend events outbox and push, and a streaming command', async () => {
    const port = await freePort();
    const root = busyProject(1, 'redacted');
    const env = streamEnv(`http://user:${secret}@127.0.0.1:${port}`, 'tok');
    const runs = [
      await runTend(['build'], { cwd: root, env }),
      await runTend(['events', 'outbox'], { cwd: root, env }),
      await runTend(['events', 'outbox', '--json'], { cwd: root, env }),
      await runTend(['events', 'push', '--timeout', '1'], { cwd: root, env }),
      await runTend(['events', 'push', '--timeout', '1', '--json'], { cwd: root, env }),
    ];
    for (const run of runs) expect(run.stdout + run.stderr).not.toContain(secret);
    expect(runs[1]!.stdout).toContain(`server: http://***@127.0.0.1:${port}`);
    expect(runs[0]!.stderr).toContain(`for http://***@127.0.0.1:${port}`);
  });
});
