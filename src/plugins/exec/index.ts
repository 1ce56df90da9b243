/**
 * The exec plugin: actions that are local commands. Build/Test/Run run a command once per
 * version; Deploy runs a command, or with `persistent: true` keeps a background process. The
 * environment is a local directory, reported like a namespace.
 */
import { Type, type Static } from 'typebox';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { TendError } from '../../errors.js';
import { deleteResult, readResult, writeResult } from '../../plugin/results.js';
import { withCleanupChecks } from '../../plugin/cleanup-wrap.js';
import type {
  ActionHandlerParams,
  ActionTypeDefinition,
  CleanupHandlers,
  LogsParams,
  PluginContext,
  PluginDefinition,
  PluginLog,
  ResolvedAction,
  RunResult,
  StatusResult,
} from '../../plugin/types.js';
import { deployLogFile, notReadyReason, readDeployState, startPersistent, stopPersistent } from './deploy.js';
import {
  ensureEnvironment,
  environmentDir,
  environmentUid,
  observeEnvironment,
  removeEnvironment,
  reportEnvironmentDeleted,
  resumeEnvironment,
} from './environment.js';
import { getLogs } from './logs.js';
import { outputFiles } from './output-files.js';
import { runCommand, type CommandResult } from './process.js';
import { runInitScript } from './init-script.js';
import {
  forgetCleanupCommand,
  recordCleanupCommand,
  runCleanupCommand,
  runRecordedCleanupCommands,
  type CleanupCommand,
} from './cleanup-command.js';
import { AnyKey } from '../../schema-check.js';

const Command = Type.Array(Type.String({ minLength: 1, maxLength: 4096 }), {
  minItems: 1,
  maxItems: 1024,
  description: 'the program and its arguments, e.g. [npm, run, build]',
});
const Env = Type.Record(AnyKey(), Type.String({ maxLength: 65_536 }), {
  propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
  description: 'environment variables added to the command',
});
const Outputs = Type.Record(AnyKey(), Type.String(), {
  propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$' },
  description:
    'outputs of the action (also from `::output key=value` lines on stdout, and from files written to $GARDEN_ACTION_OUTPUTS_PATH)',
});

export const ExecCommandSpec = Type.Object(
  {
    command: Command,
    cwd: Type.Optional(Type.String({ description: 'working directory, relative to the action source' })),
    env: Type.Optional(Env),
    outputs: Type.Optional(Outputs),
  },
  { additionalProperties: false },
);
export type ExecCommandSpec = Static<typeof ExecCommandSpec>;

export const ExecDeploySpec = Type.Object(
  {
    command: Command,
    persistent: Type.Optional(Type.Boolean({ description: 'keep the command running in the background' })),
    readiness: Type.Optional(
      Type.Object(
        {
          url: Type.Optional(
            Type.String({ pattern: '^https?://', description: 'ready when it answers 2xx' }),
          ),
          command: Type.Optional(Command),
          timeout: Type.Optional(
            Type.Number({ minimum: 0.1, maximum: 3600, description: 'seconds (default 30)' }),
          ),
        },
        {
          additionalProperties: false,
          description: 'with `persistent`: when the process is ready (default: as soon as it started)',
        },
      ),
    ),
    stopGracePeriod: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 600,
        description: 'seconds between SIGTERM and SIGKILL (default 5)',
      }),
    ),
    cwd: Type.Optional(Type.String({ description: 'working directory, relative to the action source' })),
    env: Type.Optional(Env),
    outputs: Type.Optional(Outputs),
    cleanupCommand: Type.Optional({
      ...Command,
      description:
        'run by `tend cleanup deploy` and `tend cleanup env` after the process is stopped, in the directory and environment of `command`',
    }),
  },
  { additionalProperties: false },
);
export type ExecDeploySpec = Static<typeof ExecDeploySpec>;

/** Builds are reused across environments; everything else is per environment namespace. */
function resultScope(ctx: PluginContext, action: ResolvedAction): string {
  return action.kind === 'Build' ? '_builds' : ctx.environment.namespace;
}

function commandEnv(ctx: PluginContext, action: ResolvedAction, env: Record<string, string> = {}) {
  return {
    TEND_PROJECT: ctx.environment.project,
    TEND_ENVIRONMENT: ctx.environment.name,
    TEND_NAMESPACE: ctx.environment.namespace,
    TEND_ACTION: action.ref,
    TEND_ACTION_VERSION: action.version,
    ...env,
  };
}

function cwdOf(action: ResolvedAction, cwd?: string): string {
  return cwd ? path.resolve(action.sourceDir, cwd) : action.sourceDir;
}

async function getStoredStatus(
  ctx: PluginContext,
  { action }: ActionHandlerParams<ExecCommandSpec>,
): Promise<StatusResult> {
  observeEnvironment(ctx);
  const stored = readResult(ctx.tendDir, resultScope(ctx, action), action.ref);
  if (stored?.version === action.version && (stored.exitCode ?? 0) === 0) {
    return { state: 'ready', outputs: stored.outputs };
  }
  return { state: 'not-ready' };
}

/** How much of each stream the `log`, `stdout` and `stderr` outputs keep: the end. */
const outputTextLimit = 65_536;

/**
 * Garden's outputs of an exec command (core/src/plugins/exec/common.ts): `stdout`, `stderr`, and
 * `log`, both trimmed, each the last 64 KiB of its text; they win over `::output` lines of the
 * same names, as Garden's over its outputs files.
 */
function capturingOutput(log: PluginLog): { log: PluginLog; outputs(): Record<string, string> } {
  const text = { stdout: '', stderr: '' };
  return {
    log: {
      ...log,
      output(stream, line) {
        const kept = text[stream] ? `${text[stream]}\n${line}` : line;
        text[stream] = kept.length > outputTextLimit ? kept.slice(-outputTextLimit) : kept;
        log.output(stream, line);
      },
    },
    outputs: () => ({
      log: `${text.stdout}\n${text.stderr}`.trim(),
      stdout: text.stdout,
      stderr: text.stderr,
    }),
  };
}

async function runOnce(
  ctx: PluginContext,
  { action }: ActionHandlerParams<ExecCommandSpec>,
): Promise<RunResult> {
  ensureEnvironment(ctx);
  const spec = action.spec;
  const captured = capturingOutput(ctx.log);
  const files = outputFiles();
  let result: CommandResult;
  let written: Record<string, string> = {};
  try {
    result = await runCommand(
      {
        command: spec.command,
        cwd: cwdOf(action, spec.cwd),
        env: { ...commandEnv(ctx, action, spec.env), ...files.env },
        timeoutMs: action.timeoutMs,
      },
      captured.log,
      ctx.signal,
    );
    // A failed command's files are not read: a half-written one would hide its exit code.
    if (result.exitCode === 0) written = files.read(ctx.log, action.ref);
  } finally {
    files.remove();
  }
  const outputs = { ...spec.outputs, ...result.outputs, ...written, ...captured.outputs() };
  if (result.exitCode === 0) {
    writeResult(ctx.tendDir, resultScope(ctx, action), action.ref, {
      version: action.version,
      outputs,
      completedAt: new Date().toISOString(),
      exitCode: 0,
    });
  }
  return { outputs, exitCode: result.exitCode, durationMs: result.durationMs, log: result.tail };
}

/**
 * A Build or a one-shot Deploy: the command must succeed. (Test/Run return their exit code,
 * which the solver judges.)
 */
async function runToSuccess(
  ctx: PluginContext,
  params: ActionHandlerParams<ExecCommandSpec>,
): Promise<{ outputs: Record<string, string> }> {
  const result = await runOnce(ctx, params);
  if (result.exitCode !== 0) {
    throw new TendError('TEND_EXEC_FAILED', `${params.action.ref} exited with code ${result.exitCode}`, {
      detail: { exitCode: result.exitCode, log: result.log },
    });
  }
  return { outputs: result.outputs };
}

/** A Deploy's cleanup command, run as its deploy command runs. */
function cleanupCommandOf(
  ctx: PluginContext,
  action: ResolvedAction<ExecDeploySpec>,
): CleanupCommand | undefined {
  const { cleanupCommand, cwd, env } = action.spec;
  if (!cleanupCommand) return undefined;
  return {
    ref: action.ref,
    command: cleanupCommand,
    cwd: cwdOf(action, cwd),
    env: commandEnv(ctx, action, env),
  };
}

const deployHandlers = {
  async getStatus(ctx: PluginContext, params: ActionHandlerParams<ExecDeploySpec>): Promise<StatusResult> {
    const { action } = params;
    if (!action.spec.persistent) return getStoredStatus(ctx, params as ActionHandlerParams<ExecCommandSpec>);
    observeEnvironment(ctx);
    const envDir = environmentDir(ctx);
    const state = readDeployState(envDir, action.name);
    if (state?.pausedAt && state.version === action.version) {
      return {
        state: 'paused',
        reason: `paused by cleanup at ${state.pausedAt}: resumed by the next \`tend deploy|test|run\` or \`tend resume\``,
        logFile: state.logFile,
        detail: { pausedAt: state.pausedAt },
      };
    }
    const reason = notReadyReason(state, action.version);
    // The log of the last process stays after it stopped (or failed to get ready).
    const lastLog = deployLogFile(envDir, action.name);
    if (state && !reason) {
      return { state: 'ready', outputs: state.outputs, logFile: state.logFile, detail: { pid: state.pid } };
    }
    return {
      state: 'not-ready',
      reason: reason!,
      ...(state ? { logFile: state.logFile } : existsSync(lastLog) ? { logFile: lastLog } : {}),
      detail: state ? { pid: state.pid, version: state.version } : {},
    };
  },

  async deploy(ctx: PluginContext, params: ActionHandlerParams<ExecDeploySpec>) {
    const { action } = params;
    const spec = action.spec;
    const cleanup = cleanupCommandOf(ctx, action);
    // Recorded first: `tend cleanup env` runs it even when the deploy command failed half-way.
    if (cleanup) recordCleanupCommand(ensureEnvironment(ctx), action.name, cleanup);
    if (!spec.persistent) {
      return runToSuccess(ctx, params as ActionHandlerParams<ExecCommandSpec>);
    }
    const envDir = ensureEnvironment(ctx);
    const previous = readDeployState(envDir, action.name);
    if (previous) await stopPersistent(envDir, previous);
    const state = await startPersistent({
      envDir,
      name: action.name,
      version: action.version,
      command: spec.command,
      cwd: cwdOf(action, spec.cwd),
      env: commandEnv(ctx, action, spec.env),
      readiness: spec.readiness && {
        url: spec.readiness.url,
        command: spec.readiness.command,
        timeoutMs: (spec.readiness.timeout ?? 30) * 1000,
      },
      outputs: { ...spec.outputs },
      stopGracePeriodMs: (spec.stopGracePeriod ?? 5) * 1000,
      signal: ctx.signal,
    });
    ctx.log.info(
      `${action.ref} running as pid ${state.pid}, log ${path.relative(ctx.projectRoot, state.logFile)}`,
    );
    return { outputs: state.outputs, detail: { pid: state.pid } };
  },

  async delete(ctx: PluginContext, { action }: ActionHandlerParams<ExecDeploySpec>): Promise<StatusResult> {
    const cleanup = cleanupCommandOf(ctx, action);
    if (!observeEnvironment(ctx)) {
      // As Garden: the cleanup command runs whether or not the deploy is there.
      if (cleanup) await runCleanupCommand(cleanup, ctx.log, ctx.signal);
      return { state: 'ready' };
    }
    const envDir = environmentDir(ctx);
    const state = readDeployState(envDir, action.name);
    if (state) await stopPersistent(envDir, state);
    if (cleanup) await runCleanupCommand(cleanup, ctx.log, ctx.signal);
    forgetCleanupCommand(envDir, action.name);
    deleteResult(ctx.tendDir, ctx.environment.namespace, action.ref);
    return { state: 'ready', detail: state ? { stoppedPid: state.pid } : {} };
  },

  async getLogs(ctx: PluginContext, params: LogsParams<ExecDeploySpec>): Promise<void> {
    await getLogs(ctx, params);
  },
};

const commandKind = {
  specSchema: ExecCommandSpec,
  handlers: { getResult: getStoredStatus, run: runOnce },
};

export const execActionType: ActionTypeDefinition = {
  name: 'exec',
  description: 'local commands: Build/Test/Run run once per version; Deploy runs once or keeps a process',
  kinds: {
    Build: {
      specSchema: ExecCommandSpec,
      handlers: {
        getStatus: getStoredStatus,
        build: (ctx, params) => runToSuccess(ctx, params as ActionHandlerParams<ExecCommandSpec>),
      },
    },
    Deploy: { specSchema: ExecDeploySpec, handlers: deployHandlers },
    Test: commandKind,
    Run: commandKind,
  },
};

export const execPlugin: PluginDefinition & { cleanup: CleanupHandlers } = {
  name: 'exec',
  description: 'run actions as local processes; the environment is a local directory',
  configSchema: Type.Object(
    {
      initScript: Type.Optional(
        Type.String({
          description:
            'A script run with `sh -c` in the project root when a command prepares the environment (build, deploy, test, run); its output is ${providers.exec.outputs.initScript.log}.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
  emits: ['namespaceStatus', 'log'],
  provider: {
    async init() {
      return undefined;
    },
    async getEnvironmentStatus(ctx) {
      return { ready: observeEnvironment(ctx) };
    },
    async prepareEnvironment(ctx) {
      ensureEnvironment(ctx);
      const { initScript } = (ctx.provider.config ?? {}) as { initScript?: string };
      if (initScript === undefined) return { ready: true, outputs: {} };
      return { ready: true, outputs: await runInitScript(ctx, initScript) };
    },
    async cleanupEnvironment(ctx) {
      const envDir = environmentDir(ctx);
      const uid = environmentUid(ctx);
      const cleaned = await runRecordedCleanupCommands(envDir, ctx.log, ctx.signal);
      const stopped = cleaned.stopped + (await removeEnvironment(envDir));
      reportEnvironmentDeleted(ctx, uid);
      return {
        deleted: true,
        message:
          `stopped ${stopped} process(es) and removed ${path.relative(ctx.projectRoot, envDir)}` +
          cleaned.failures.map((failure) => `; ${failure}`).join(''),
      };
    },
    async resumeEnvironment(ctx) {
      if (!observeEnvironment(ctx)) return { resumed: false, message: 'the environment does not exist' };
      const started = await resumeEnvironment(environmentDir(ctx), ctx.signal);
      return started.length > 0
        ? { resumed: true, message: `started the paused process(es) ${started.join(', ')} again` }
        : { resumed: false, message: 'the environment is not paused' };
    },
  },
  actionTypes: [execActionType],
  cleanup: withCleanupChecks({
    targetKind: 'local',
    words: { resource: 'environment', target: 'host' },
    settingsSchema: Type.Object({}, { additionalProperties: false }),
    settingsFromFlags: (flags) => (flags.local ? {} : undefined),
    targets: async (ctx) => (await import('./cleanup.js')).targets(ctx),
    inventory: async () => (await import('./cleanup.js')).inventory(),
    read: async (ctx, target, ref) => (await import('./cleanup.js')).read(ctx, target, ref),
    delete: async (ctx, target, resource, precondition) =>
      (await import('./cleanup.js')).remove(ctx, target, resource, precondition),
    pause: async (ctx, target, resource, precondition) =>
      (await import('./cleanup.js')).pause(ctx, target, resource, precondition),
    resume: async (ctx, target, resource, precondition) =>
      (await import('./cleanup.js')).resume(ctx, target, resource, precondition),
    archive: async (ctx, target, resource) => (await import('./cleanup.js')).archive(ctx, target, resource),
  }),
};
