/**
 * What the end-to-end tests of third-party plugin examples (plugin-dirs, plugin-buckets) share: an
 * example project run with the real CLI, streaming to a test server, and `tend agent --plugin`
 * serving the plugin's targets with `--set` settings.
 */
import path from 'node:path';
import { expect } from 'vitest';
import { runTend, waitFor, type TendRun } from '../helpers/project.js';
import type { TestServer } from '../server/helpers.js';
import { streamEnv } from '../stream/helpers.js';
import { TokenRepository } from '../../src/server/db/repositories/tokens.js';

/** What `tend agent --once --json` prints of its pass. */
export interface AgentReport {
  last: {
    targets: { targetKey: string }[];
    inventories: { targetKey: string; complete: boolean; items: number; response?: { recorded: number } }[];
    jobs: { outcome: string; namespace?: string; message: string }[];
  };
}
export type AgentPass = AgentReport['last'];

/** The real CLI in `project` with a token, streaming to the server at `url`; no cluster (`scratch` holds no kubeconfig). */
export function projectCli(project: string, url: string, scratch: string) {
  return (token: string, ...args: string[]): Promise<TendRun> =>
    runTend(args, {
      cwd: project,
      env: streamEnv(url, token, { KUBECONFIG: path.join(scratch, 'no-kubeconfig') }),
    });
}
export type ProjectCli = ReturnType<typeof projectCli>;

/**
 * One pass of `tend agent --plugin <module> --set …` with the token (`--once --json`): exits 0,
 * and its report.
 */
export function pluginAgent(
  cli: ProjectCli,
  o: { url: string; token: string; plugin: string; settings: string[] },
) {
  return async (...extra: string[]): Promise<AgentPass> => {
    const sets = o.settings.flatMap((setting) => ['--set', setting]);
    const run = await cli(
      o.token,
      'agent',
      '--server',
      o.url,
      '--token',
      o.token,
      '--plugin',
      o.plugin,
      ...sets,
      '--once',
      '--json',
      ...extra,
    );
    expect(run.code, run.stderr).toBe(0);
    return (JSON.parse(run.stdout) as AgentReport).last;
  };
}

/** `tend cleanup enforce --project <project>` with the admin token: the policies stop being dry-run. */
export async function enforce(
  cli: ProjectCli,
  server: TestServer,
  url: string,
  project: string,
): Promise<void> {
  const token = server.tokens.admin;
  const run = await cli(token, 'cleanup', 'enforce', '--project', project, '--server', url, '--token', token);
  expect(run.code, run.stderr).toBe(0);
}

/** An agent token bound to one target, as an operator binds one to a cluster. */
export async function agentTokenFor(server: TestServer, name: string, targetKey: string): Promise<string> {
  return (
    await new TokenRepository(server.database.db).create({ name, scope: 'agent', targets: [targetKey] })
  ).token;
}

/** The id of the environment `name` once the server recorded it. */
export function recordedEnvironmentId(server: TestServer, name: string): Promise<string> {
  return waitFor(async () => {
    const row = await server.database.db
      .selectFrom('environments')
      .select('id')
      .where('name', '=', name)
      .executeTakeFirst();
    return row?.id;
  }, `the ${name} environment recorded`);
}
