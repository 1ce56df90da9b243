/**
 * `tend resume`: restores exactly what a pause recorded in the current environment (each
 * provider's `resumeEnvironment`: the replicas and CronJob suspension of what tend deployed, the
 * local processes of an exec environment). `tend deploy|test|run` do the same at their start.
 * The server sees the session (command `resume`) and marks the environment active again.
 */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { ExitCode } from '../errors.js';
import { builtinPlugins } from '../plugins/builtin.js';
import type { PluginDefinition } from '../plugin/types.js';
import type { Router } from '../router/router.js';
import { openProject, startSession } from './context.js';

export interface ResumeData {
  project: string;
  environment: string;
  namespace: string;
  resumed: boolean;
  /** One line per provider that can resume: what it restored, or why nothing. */
  providers: { provider: string; resumed: boolean; message: string }[];
}

/** Calls every provider's resumeEnvironment; returns the messages of those that resumed something. */
export async function resumeProviders(
  router: Router,
  all: { provider: string; resumed: boolean; message: string }[] = [],
): Promise<string[]> {
  const lines: string[] = [];
  for (const provider of router.providers) {
    if (typeof provider.plugin.provider.resumeEnvironment !== 'function') continue;
    const result = await router.callProvider(provider, 'resumeEnvironment');
    all.push({ provider: provider.name, ...result });
    if (result.resumed) lines.push(result.message);
  }
  return lines;
}

export async function resumeCommand(
  options: GlobalOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<ResumeData>> {
  const opened = await openProject(options, plugins);
  const { router, close } = startSession(opened, 'resume', []);
  const providers: ResumeData['providers'] = [];
  try {
    await router.initProviders();
    await resumeProviders(router, providers);
    await close({ counts: { succeeded: providers.length, cached: 0, failed: 0, aborted: 0 } });
  } catch (error) {
    await close({ error });
    throw error;
  }
  const resumed = providers.some((p) => p.resumed);
  const env = opened.environment;
  return {
    exitCode: ExitCode.ok,
    human: [
      resumed
        ? `resumed environment ${env.name} (namespace ${env.namespace})`
        : `environment ${env.name} (namespace ${env.namespace}) is not paused`,
      ...providers.map((p) => `  ${p.provider}: ${p.message}`),
    ].join('\n'),
    data: {
      project: opened.project.name,
      environment: env.name,
      namespace: env.namespace,
      resumed,
      providers,
    },
  };
}
