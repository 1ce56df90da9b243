/**
 * An exec Deploy's `cleanupCommand` (Garden's): run when the deploy is torn down by hand, after
 * its process is stopped, with the directory and environment of its deploy command.
 * `tend cleanup deploy <name>` runs the one of the configuration; `tend cleanup env` runs the
 * ones recorded in the environment when each deploy ran (`.tend/envs/<namespace>/cleanup-commands/`),
 * since it removes the environment without reading the configuration's Deploys. The server's
 * automatic cleanup does not run them (it removes what tend recorded, nothing more).
 */
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { TendError, toTendError } from '../../errors.js';
import type { PluginLog } from '../../plugin/types.js';
import { listNamesWithSuffix, writeFileAtomic } from '../../state/files.js';
import { readDeployState, stopPersistent } from './deploy.js';
import { runCommand } from './process.js';

export interface CleanupCommand {
  /** The deploy's reference: `deploy.db`. */
  ref: string;
  command: string[];
  cwd: string;
  env: Record<string, string>;
}

function cleanupDir(envDir: string): string {
  return path.join(envDir, 'cleanup-commands');
}

/** Remembers a deploy's cleanup command in its environment (before its deploy command runs). */
export function recordCleanupCommand(envDir: string, name: string, cleanup: CleanupCommand): void {
  writeFileAtomic(path.join(cleanupDir(envDir), `${name}.json`), JSON.stringify(cleanup, null, 2));
}

export function forgetCleanupCommand(envDir: string, name: string): void {
  rmSync(path.join(cleanupDir(envDir), `${name}.json`), { force: true });
}

/** Runs a cleanup command; a non-zero exit is a TEND_EXEC_FAILED naming the deploy. */
export async function runCleanupCommand(
  cleanup: CleanupCommand,
  log: PluginLog,
  signal: AbortSignal,
): Promise<void> {
  log.info(`${cleanup.ref}: running its cleanupCommand ${cleanup.command.join(' ')}`);
  const result = await runCommand(
    { command: cleanup.command, cwd: cleanup.cwd, env: cleanup.env },
    log,
    signal,
  );
  if (result.exitCode !== 0) {
    throw new TendError(
      'TEND_EXEC_FAILED',
      `${cleanup.ref}: its cleanupCommand exited with code ${result.exitCode}`,
      {
        detail: { exitCode: result.exitCode, log: result.tail },
      },
    );
  }
}

/**
 * The recorded cleanup commands of an environment, each after its deploy's process is stopped;
 * one that fails does not stop the others. Returns how many processes it stopped and the
 * failures, one line each.
 */
export async function runRecordedCleanupCommands(
  envDir: string,
  log: PluginLog,
  signal: AbortSignal,
): Promise<{ stopped: number; failures: string[] }> {
  const failures: string[] = [];
  let stopped = 0;
  for (const name of listNamesWithSuffix(cleanupDir(envDir), '.json')) {
    let cleanup: CleanupCommand;
    try {
      cleanup = JSON.parse(
        readFileSync(path.join(cleanupDir(envDir), `${name}.json`), 'utf8'),
      ) as CleanupCommand;
    } catch (error) {
      failures.push(
        `deploy.${name}: its recorded cleanupCommand cannot be read (${(error as Error).message})`,
      );
      continue;
    }
    try {
      const state = readDeployState(envDir, name);
      if (state) {
        await stopPersistent(envDir, state);
        stopped++;
      }
      await runCleanupCommand(cleanup, log, signal);
      forgetCleanupCommand(envDir, name);
    } catch (error) {
      failures.push(toTendError(error).message);
    }
  }
  return { stopped, failures };
}
