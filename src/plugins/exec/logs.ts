/**
 * `Deploy.getLogs` of exec: a persistent deploy's log file (`.tend/envs/<namespace>/deploys/<name>.log`,
 * stdout and stderr of its process together), its last N lines, then — following — what the
 * process appends until it exits or the command is interrupted. Read-only.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../../errors.js';
import type { LogsParams, PluginContext } from '../../plugin/types.js';
import { readLines, tailStart } from '../../state/follow.js';
import { isAlive, readDeployState } from './deploy.js';
import { environmentDir, observeEnvironment } from './environment.js';

export async function getLogs(
  ctx: PluginContext,
  params: LogsParams<{ persistent?: boolean }>,
): Promise<void> {
  const { action, follow, tail, onLine } = params;
  const observed = observeEnvironment(ctx);
  if (!action.spec.persistent) {
    throw new TendError(
      'TEND_LOGS_UNSUPPORTED',
      `${action.ref} is not persistent: it runs once and keeps no log file`,
      {
        actionRef: action.ref,
        detail: { hint: `tend events --action ${action.ref} shows what it printed when it ran` },
      },
    );
  }
  const state = observed ? readDeployState(environmentDir(ctx), action.name) : undefined;
  if (!state || !existsSync(state.logFile)) {
    throw new TendError(
      'TEND_LOGS_UNAVAILABLE',
      `${action.ref} is not deployed in environment ${ctx.environment.name} (namespace ${ctx.environment.namespace})`,
      { actionRef: action.ref, detail: { hint: `tend deploy ${action.name}` } },
    );
  }
  const source = `process ${state.pid}`;
  if (follow && !isAlive(state)) {
    ctx.log.warn(
      `${action.ref}: process ${state.pid} is not running; showing its log (${path.relative(ctx.projectRoot, state.logFile)})`,
    );
  }
  // The tail is counted back from this end; without --follow nothing after it is read.
  const end = statSync(state.logFile).size;
  await readLines(state.logFile, {
    from: tail === undefined ? 0 : tailStart(state.logFile, tail, end),
    ...(follow ? {} : { to: end }),
    follow,
    until: () => !isAlive(state),
    signal: ctx.signal,
    onLine: (text) => onLine({ source, text }),
  });
}
