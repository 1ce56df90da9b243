/**
 * The argument table of `tend cleanup`: removing what tend deployed (`env`, `deploy`) and
 * seeing and steering the server's automatic cleanup (`plan`, `status`, `enforce`, `halt`,
 * `unhalt` — `resume` before, still working, deprecated —, `breaker reset`, `report`: what it saved). Command modules are
 * imported lazily, as in main.ts.
 */
import { Option, type Command } from 'commander';
import { durationFlag, wholeNumber } from '../cli/flag-values.js';
import type { CommandResult } from '../cli/output.js';

export function addCleanupCommands(
  cleanup: Command,
  serverFlags: (c: Command) => Command,
  execute: (command: Command, load: () => Promise<CommandResult>) => Promise<void>,
): void {
  const cleanupServer = () => import('./cleanup-server.js');
  cleanup
    .command('env')
    .description('clean up the whole environment: stop its deploys and delete the namespace tend owns')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await import('./cleanup.js')).cleanupEnvCommand(cmd.optsWithGlobals())),
    );
  cleanup
    .command('deploy <names...>')
    .description('delete the named deploys from the environment')
    .action(async (names: string[], _opts, cmd: Command) =>
      execute(cmd, async () =>
        (await import('./cleanup.js')).cleanupDeployCommand(names, cmd.optsWithGlobals()),
      ),
    );

  serverFlags(
    cleanup
      .command('plan')
      .description("what the server's automatic cleanup will do, when, and why (or why not)"),
  )
    .addOption(
      new Option('--within <duration>', 'decisions due within this time (at most 365d)')
        .default('24h')
        .argParser(durationFlag('within', { maxDays: 365, zero: true })),
    )
    .option('--project <project>', 'only this project')
    .addOption(
      new Option('--limit <n>', 'most decisions shown')
        .default(200)
        .argParser(wholeNumber('limit', 1, 1_000_000)),
    )
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await cleanupServer()).cleanupPlanCommand(cmd.optsWithGlobals())),
    );
  serverFlags(
    cleanup
      .command('enforce')
      .description(
        'enforce the cleanup policy of a project (new or stricter policies run as dry-run until then; admin)',
      ),
  )
    .requiredOption('--project <project>', 'the project')
    .option('--environment <name>', 'only this environment name')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await cleanupServer()).cleanupEnforceCommand(cmd.optsWithGlobals())),
    );
  // `unhalt`, not `resume`: `tend resume` resumes a paused environment, something else entirely.
  for (const name of ['halt', 'unhalt', 'resume'] as const) {
    const halt = name === 'halt';
    serverFlags(
      cleanup
        .command(name, { hidden: name === 'resume' })
        .description(
          halt
            ? 'stop all automatic cleanup at once, until `tend cleanup unhalt` (admin)'
            : 'lift the halt: automatic cleanup plans and runs again (admin)',
        ),
    ).action(async (_opts, cmd: Command) =>
      execute(cmd, async () => {
        if (name === 'resume') {
          process.stderr.write(
            'warning: `tend cleanup resume` is deprecated: it is `tend cleanup unhalt` (`tend resume` resumes a paused environment)\n',
          );
        }
        return (await cleanupServer()).cleanupHaltCommand(halt, cmd.optsWithGlobals());
      }),
    );
  }
  serverFlags(
    cleanup
      .command('breaker')
      .description("a project's circuit breaker")
      .command('reset')
      .description('close the circuit breaker of a project after checking why it opened (admin)'),
  )
    .requiredOption('--project <project>', 'the project')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () => (await cleanupServer()).breakerResetCommand(cmd.optsWithGlobals())),
    );
  serverFlags(
    cleanup
      .command('report')
      .description(
        "what the server's cleanup saved: resource-hours freed by deletions and pauses, per project, in money with the server's prices",
      ),
  )
    .addOption(
      new Option('--since <duration>', 'the window back from now (1m to 365d)')
        .default('30d')
        .argParser(durationFlag('since', { maxDays: 365 })),
    )
    .option('--project <project>', 'only this project')
    .action(async (_opts, cmd: Command) =>
      execute(cmd, async () =>
        (await import('./cleanup-report.js')).cleanupReportCommand(cmd.optsWithGlobals()),
      ),
    );
  serverFlags(
    cleanup
      .command('status')
      .description(
        "the state of the server's automatic cleanup: halt switch, breakers, executors, inventories held back as suspect, unrecorded namespaces",
      ),
  ).action(async (_opts, cmd: Command) =>
    execute(cmd, async () => (await cleanupServer()).cleanupStatusCommand(cmd.optsWithGlobals())),
  );
}
