/**
 * Flags of the commands that talk to a server are checked by the CLI before any request: a bad
 * value is a usage error (exit 2) naming the flag, worded as tend.yml's errors are, never the
 * server's schema error about a field of its API (`body/for must match pattern …`). A listening
 * HTTP server on 127.0.0.1 stands for the tend server and counts the requests it gets: none.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeProject, removeProjects, runTend } from '../helpers/project.js';

let server: http.Server;
const requests: string[] = [];
let env: Record<string, string>;

beforeAll(async () => {
  server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    response.writeHead(500).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const home = makeProject({});
  env = {
    HOME: home,
    TEND_CONFIG_DIR: `${home}/tend`,
    TEND_SERVER_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    TEND_TOKEN: 'tend_test',
  };
});

afterAll(async () => {
  removeProjects();
  await new Promise((resolve) => server.close(resolve));
});

const duration = 'a whole number followed by m, h or d (e.g. 30m, 8h, 3d)';

describe('bad flag values are refused before any request', () => {
  it.each([
    [['keep-alive', '--for', '3x'], `--for expects a duration from 1m to 30d: ${duration}, got "3x"`],
    [['keep-alive', '--for', '31d'], `--for expects a duration from 1m to 30d: ${duration}, got "31d"`],
    [['keep-alive', '--for', '0h'], `--for expects a duration from 1m to 30d: ${duration}, got "0h"`],
    [['cleanup', 'plan', '--limit', '0'], '--limit expects a whole number from 1, got "0"'],
    [
      ['cleanup', 'plan', '--within', '3x'],
      `--within expects a duration of at most 365 days: ${duration}, got "3x"`,
    ],
    [
      ['cleanup', 'plan', '--within', '400d'],
      `--within expects a duration of at most 365 days: ${duration}, got "400d"`,
    ],
    [['envs', '--limit', '1.5'], '--limit expects a whole number from 1, got "1.5"'],
    [
      ['envs', '--stale-since', 'yesterday'],
      `--stale-since expects a duration of at most 365 days: ${duration} or a time such as 2025-05-01T12:00:00Z, got "yesterday"`,
    ],
    [['envs', '--state', 'gone'], "option '--state <state>' argument 'gone' is invalid"],
    [['events', '--limit', 'x'], '--limit expects a whole number from 1, got "x"'],
    [
      ['events', 'push', '--timeout', 'soon'],
      '--timeout expects a whole number of seconds from 1, got "soon"',
    ],
    [
      [
        'server',
        'webhook',
        'add',
        '--server',
        'SERVER',
        '--url',
        'https://hooks.example.com/x',
        '--event',
        'nope',
      ],
      '--event must be one of cleanup.warning, cleanup.done, got "nope"',
    ],
    [
      ['server', 'token', 'create', '--server', 'SERVER', '--name', 'ci', '--project', 'Shop'],
      '--project must be a project name, got "Shop"',
    ],
  ])('%j: exit 2, the flag named', async (args, message) => {
    const run = await runTend(
      args.map((a) => (a === 'SERVER' ? env.TEND_SERVER_URL! : a)),
      { cwd: env.HOME, env },
    );
    expect(run.code, run.stdout).toBe(2);
    expect(run.stderr).toContain(`error: ${message}`);
    expect(requests).toEqual([]);
  });

  it('good values reach the server (the counter counts)', async () => {
    const run = await runTend(['cleanup', 'plan', '--within', '7d', '--limit', '10'], { cwd: env.HOME, env });
    expect(run.code).not.toBe(0);
    expect(requests).toEqual(['GET /api/v1/cleanup/plan?within=7d&limit=10']);
  });
});
