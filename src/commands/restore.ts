/**
 * `tend restore <environment-id> [--into <new-namespace>]` (docs/cleanup.md#undo): brings back an
 * environment that automatic cleanup, clean up now or a closed pull request deleted, from the
 * archive its executor stored with the server before the deletion. It runs here, with the
 * user's kubeconfig, as a session of the project (command `restore`): the namespace is created
 * through the namespace gate, so the session's `created` event with its uid makes it owned and
 * recorded like any namespace a command creates, and the environment active again. Needs an
 * admin token (the archive holds the environment's Secrets).
 */
import type { CommandResult, GlobalOptions } from '../cli/output.js';
import type { RestorableArchive } from '../cleanup/archive.js';
import { nameMaxLength, nameRegExp } from '../config/project.js';
import { defaultSystemNamespace, namespaceProtector } from '../cleanup/protection.js';
import { ExitCode, TendError } from '../errors.js';
import type { PluginDefinition, RestoreResult } from '../plugin/types.js';
import { builtinPlugins } from '../plugins/builtin.js';
import { apiRequest } from '../remote/client.js';
import { requireServer } from '../remote/credentials.js';
import { openProject, startSession } from './context.js';

export interface RestoreOptions extends GlobalOptions {
  into?: string;
  server?: string;
  token?: string;
}

export interface RestoreData {
  environmentId: string;
  project: string;
  environment: string;
  namespace: string;
  archiveId: string;
  archivedAt: string;
  restored: string[];
  notRestored: RestoreResult['notRestored'];
}

/**
 * A namespace name Kubernetes takes (a DNS label): the rule of tend.yml's names; and never one
 * of the names tend never writes to (`kube-*`, `default`, the tend system namespace). The server
 * checks the same, with its own `--protect-namespace` patterns, before the session starts.
 */
function checkInto(value: string): string {
  if (value.length > nameMaxLength || !nameRegExp.test(value)) {
    throw new TendError(
      'TEND_USAGE',
      `--into expects a namespace name: lower-case letters, digits and "-", starting and ending with a letter or digit, at most ${nameMaxLength} characters, got "${value.slice(0, 100)}"`,
    );
  }
  const why = namespaceProtector({ systemNamespace: defaultSystemNamespace, patterns: [] })(value);
  if (why) {
    throw new TendError(
      'TEND_USAGE',
      `--into ${value}: the namespace is protected (${why}); name a new namespace`,
    );
  }
  return value;
}

export async function restoreCommand(
  environmentId: string,
  options: RestoreOptions,
  plugins: PluginDefinition[] = builtinPlugins(),
): Promise<CommandResult<RestoreData>> {
  const into = options.into !== undefined ? checkInto(options.into) : undefined;
  const connection = requireServer(options);
  const id = encodeURIComponent(environmentId);
  // The server checks the namespace before anything exists (a protected name, one recorded for
  // another environment), as it checks a restore job's: no session starts for a refused restore.
  const query = into ? `?into=${encodeURIComponent(into)}` : '';
  const restorable = await apiRequest<RestorableArchive>(
    connection,
    `/api/v1/environments/${id}/archive${query}`,
  );
  // The archived namespace, or the new one named: the session records the environment there.
  const opened = await openProject({ ...options, env: restorable.environment }, plugins, {
    namespace: into ?? restorable.namespaceName,
  });
  if (opened.project.name !== restorable.project) {
    throw new TendError(
      'TEND_USAGE',
      `the archive is of project "${restorable.project}", this is project "${opened.project.name}": run tend restore in that project's directory (or --root)`,
    );
  }
  // The plugin that took the archive: a plugin's own archive names it.
  const archive = restorable.archive;
  const pluginName =
    archive.kind === 'kubernetes' ? 'kubernetes' : archive.kind === 'plugin' ? archive.pluginName : 'exec';
  const provider = opened.providers.find(
    (p) => typeof p.plugin.provider.restoreEnvironment === 'function' && p.plugin.name === pluginName,
  );
  if (!provider) {
    throw new TendError(
      'TEND_ARCHIVE',
      `no provider of environment ${restorable.environment} can restore a ${restorable.archive.kind} archive` +
        (restorable.archive.kind === 'exec'
          ? ': an exec environment is started again with tend deploy (its archived state record is for people)'
          : ''),
    );
  }
  // Not the plan's warning line: the plan the server has is of the namespace before its deletion
  // (it was due then); what comes next is said below.
  const { router, close } = startSession(
    opened,
    'restore',
    [environmentId, ...(into ? ['--into', into] : [])],
    { cleanupWarning: false },
  );
  let result: RestoreResult;
  try {
    await router.initProviders();
    result = await router.callProvider(provider, 'restoreEnvironment', {
      archive: restorable.archive,
      missingSecrets: restorable.missingSecrets,
    });
    await close({
      counts: { succeeded: result.restored.length, cached: 0, failed: result.notRestored.length, aborted: 0 },
    });
  } catch (error) {
    await close({ error });
    throw error;
  }
  await apiRequest(connection, `/api/v1/environments/${id}/archive/restored`, {
    method: 'POST',
    body: { archiveId: restorable.archiveId },
  });
  const lines = [
    `restored environment ${restorable.project}/${restorable.environment} into namespace ${result.namespace} ` +
      `from the archive of ${restorable.createdAt}: ${result.restored.length} object(s)`,
    ...result.restored.map((what) => `  restored  ${what}`),
  ];
  if (result.notRestored.length > 0) {
    lines.push('not restored:');
    for (const { what, why } of result.notRestored) lines.push(`  ${what}: ${why}`);
  }
  // What the planner does with it: no decision on the new namespace until an inventory lists its
  // uid (blocked, not-owned, until then), and from then the policy's wait counts from this restore.
  lines.push(
    opened.environment.cleanup
      ? `next: cleanup leaves namespace ${result.namespace} alone until its executor's next inventory lists it; ` +
          'from then its policy counts from this restore, the last activity (`tend status` shows the plan)'
      : `next: no cleanup policy applies to environment ${restorable.environment}: cleanup leaves it alone`,
  );
  return {
    exitCode: ExitCode.ok,
    human: lines.join('\n'),
    data: {
      environmentId: restorable.environmentId,
      project: restorable.project,
      environment: restorable.environment,
      namespace: result.namespace,
      archiveId: restorable.archiveId,
      archivedAt: restorable.createdAt,
      restored: result.restored,
      notRestored: result.notRestored,
    },
  };
}
