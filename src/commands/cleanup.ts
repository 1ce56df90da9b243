/**
 * `tend cleanup env` removes the environment (each provider's `cleanupEnvironment`);
 * `tend cleanup deploy <names…>` deletes the named deploys.
 */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import { actionRef } from '../config/project.js';
import { ExitCode, TendError, toTendError } from '../errors.js';
import { ActionGraph } from '../graph/graph.js';
import { checkCleanupAllowed } from '../remote/cleanup-plan.js';
import { actionVersions, openProject, resolveAction, startSession } from './context.js';

export interface CleanupEnvData {
  sessionId: string;
  namespace: string;
  providers: { name: string; deleted: boolean; message: string }[];
}

export async function cleanupEnvCommand(options: GlobalOptions): Promise<CommandResult<CleanupEnvData>> {
  const opened = await openProject(options);
  // Before any session or deletion: an open breaker refuses the command whole.
  const { warning } = await checkCleanupAllowed({
    server: opened.project.server,
    project: opened.project.name,
    environment: opened.environment.name,
    namespace: opened.environment.namespace,
  });
  if (warning) process.stderr.write(`${warning}\n`);
  // No "this environment will be deleted at …" line after deleting it: the plan it would come
  // from was made before.
  const { session, router, close } = startSession(opened, 'cleanup env', [], { cleanupWarning: false });
  try {
    const providers: CleanupEnvData['providers'] = [];
    await router.initProviders();
    for (const provider of router.providers) {
      const result = await router.callProvider(provider, 'cleanupEnvironment');
      providers.push({ name: provider.name, ...result });
    }
    await close({ counts: { succeeded: providers.length, cached: 0, failed: 0, aborted: 0 } });
    return {
      exitCode: ExitCode.ok,
      human: providers.map((p) => `${p.name}: ${p.message}`).join('\n'),
      data: { sessionId: session.id, namespace: opened.environment.namespace, providers },
    };
  } catch (error) {
    await close({ error });
    throw error;
  }
}

export interface CleanupDeployData {
  sessionId: string;
  deploys: { ref: string; deleted: boolean; error?: string }[];
}

export async function cleanupDeployCommand(
  names: string[],
  options: GlobalOptions,
): Promise<CommandResult<CleanupDeployData>> {
  const opened = await openProject(options);
  const refs = names.map((name) => {
    const ref = actionRef('Deploy', name);
    if (!opened.actions.some((a) => a.ref === ref)) {
      const known = opened.actions.filter((a) => a.kind === 'Deploy').map((a) => a.name);
      throw new TendError(
        'TEND_ACTION_NOT_FOUND',
        `no Deploy action named "${name}"; defined: ${known.join(', ') || '(none)'}`,
      );
    }
    return ref;
  });
  const { session, router, close } = startSession(opened, 'cleanup deploy', names);
  try {
    await router.initProviders();
    const graph = new ActionGraph(opened.actions);
    const versions = await actionVersions(opened, graph, refs);
    const deploys: CleanupDeployData['deploys'] = [];
    for (const ref of refs) {
      try {
        // Deleting needs no outputs of dependencies (nothing ran in this session): references stay as written.
        const action = resolveAction(opened, graph, versions, ref, {}, { keepActionOutputs: true });
        await router.callAction(action, 'delete', { force: false });
        deploys.push({ ref, deleted: true });
      } catch (error) {
        deploys.push({ ref, deleted: false, error: toTendError(error).message });
      }
    }
    const failed = deploys.filter((d) => !d.deleted).length;
    await close({ counts: { succeeded: deploys.length - failed, cached: 0, failed, aborted: 0 } });
    return {
      exitCode: failed > 0 ? ExitCode.actionFailed : ExitCode.ok,
      human: deploys.map((d) => (d.deleted ? `deleted ${d.ref}` : `✗ ${d.ref}: ${d.error}`)).join('\n'),
      data: { sessionId: session.id, deploys },
    };
  } catch (error) {
    await close({ error });
    throw error;
  }
}
