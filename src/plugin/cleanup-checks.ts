/**
 * The framework's cleanup: every safety check, for every plugin, around the primitives a plugin
 * supplies (`read`, `delete`, `pause`, `resume`, `archive`). A plugin whose primitives check
 * nothing still cannot get a protected, foreign, adopted, active or changed resource deleted: the
 * target, the name, protection, the ownership proof, the marks read fresh, identity, activity
 * since the plan, dry-run and the server's last word are all decided here, and only then is the
 * acting primitive called, with the identity and version that were checked as its precondition.
 */
import { Value } from 'typebox/value';
import { namespaceProtector } from '../cleanup/protection.js';
import { CleanupResource as CleanupResourceSchema } from '../cleanup/protocol.js';
import { executorTargetKeyOfRecorded } from '../cleanup/targets.js';
import { TendError } from '../errors.js';
import type {
  CleanupActionResult,
  CleanupCallContext,
  CleanupPrimitives,
  CleanupResource,
  CleanupResourceRef,
  CleanupResult,
  CleanupTarget,
  QueuedCleanupJob,
} from './types.js';

/** What may name a resource in a target: one segment of letters, digits, `.`, `_`, `-` (never `.` or `..`). */
const resourceName = /^[a-z0-9][a-z0-9._-]{0,252}$/;

const defaultWords = { resource: 'resource', target: 'target' };

const pastTense = { delete: 'deleted', pause: 'paused', resume: 'resumed' } as const;

/**
 * What a job names, checked before anything is read — for every job, a restore's too: the job's
 * target is this one, the name is a name, and not a protected one. Why not, or undefined.
 */
export function refusedBeforeReading<Settings>(
  cleanup: CleanupPrimitives<Settings>,
  ctx: Pick<CleanupCallContext<Settings>, 'protection'>,
  target: CleanupTarget,
  job: QueuedCleanupJob,
): string | undefined {
  const words = cleanup.words ?? defaultWords;
  const name = job.namespaceName;
  const recordedTarget = executorTargetKeyOfRecorded(job.target);
  if (recordedTarget !== target.targetKey)
    return `the job's target ${recordedTarget ?? '(none)'} is not ${target.targetKey}`;
  if (!resourceName.test(name)) return `"${name}" names no ${words.resource}`;
  const protectedBy = namespaceProtector({
    systemNamespace: ctx.protection.systemName,
    patterns: ctx.protection.patterns,
  })(name);
  return protectedBy ? `${words.resource} ${name} is protected (${protectedBy})` : undefined;
}

/** What `read` is given for a job: the name, the recorded target's path, the job's project and environment. */
function resourceRefOf(job: QueuedCleanupJob): CleanupResourceRef {
  return {
    name: job.namespaceName,
    ...(typeof job.target.path === 'string' ? { path: job.target.path } : {}),
    project: job.project,
    environment: job.environment,
  };
}

/**
 * Why a restore job may not write into what it names: what `refusedBeforeReading` refuses, or a
 * resource that exists under the name (read fresh) — a refusal of the framework's, so that it is
 * final for every plugin, whatever its `restore` would throw.
 */
export async function refusedBeforeRestoring<Settings>(
  cleanup: CleanupPrimitives<Settings>,
  ctx: Omit<CleanupCallContext<Settings>, 'confirm' | 'archive'>,
  target: CleanupTarget,
  job: QueuedCleanupJob,
): Promise<string | undefined> {
  const refused = refusedBeforeReading(cleanup, ctx, target, job);
  if (refused) return refused;
  const existing = await cleanup.read(ctx, target, resourceRefOf(job));
  const words = cleanup.words ?? defaultWords;
  return existing ? `${words.resource} ${job.namespaceName} exists again (uid ${existing.uid})` : undefined;
}

/**
 * One job, checked and acted on: `done` (acted, or already gone), `cancelled` (a check refused
 * it, a dry run, the server withdrew it, or the precondition failed), or a throw (failed,
 * retried later). Never `done` for an action that did not happen, unless the resource was gone.
 */
export async function verifyAndClean<Settings>(
  cleanup: CleanupPrimitives<Settings>,
  ctx: CleanupCallContext<Settings>,
  target: CleanupTarget,
  job: QueuedCleanupJob,
): Promise<CleanupResult> {
  const words = cleanup.words ?? defaultWords;
  const name = job.namespaceName;
  const it = `${words.resource} ${name}`;
  const cancelled = (message: string): CleanupResult => ({ outcome: 'cancelled', message });
  const leftAlone = (why: string) => cancelled(`${it} left alone: ${why}`);

  const refused = refusedBeforeReading(cleanup, ctx, target, job);
  if (refused) return cancelled(refused);
  if (!job.namespaceUid) return cancelled(`no recorded uid for ${it}: no ownership proof`);
  const action = job.action;
  if (action === 'restore') return cancelled('a restore job is not cleaned: it is restored');
  const act = action === 'delete' ? cleanup.delete : cleanup[action];
  if (!act) return cancelled(`a ${words.resource} of plugin ${ctx.provider.name} has nothing to ${action}`);

  // The primitives get neither the server's last word nor the archive: those are the framework's.
  const { confirm, archive, ...plain } = ctx;
  const resource = await cleanup.read(plain, target, resourceRefOf(job));
  if (resource === undefined) return { outcome: 'done', message: `${it} does not exist (already gone)` };
  if (!Value.Check(CleanupResourceSchema, resource)) {
    throw new TendError(
      'TEND_PLUGIN_INVALID',
      `plugin ${ctx.provider.name}: its read of ${it} is not a resource (${describeInvalid(resource)})`,
    );
  }
  const refusal = refusalOf(resource, job, words);
  if (refusal) return leftAlone(refusal);

  if (job.dryRun) {
    const would = await cleanup.preview?.(plain, target, resource, action);
    return cancelled(
      `dry run: ${it} passed every check; ${would ? `would ${action} ${would}` : `not ${pastTense[action]}`}`,
    );
  }
  // The server's last word, right before the irreversible step: a command started since wins.
  const stop = await confirm?.();
  if (stop) return leftAlone(stop);
  // A plugin that keeps no archive (no `archive` primitive) deletes without one, as it always did.
  if (action === 'delete' && (job.archive ?? 'none') !== 'none' && cleanup.archive) {
    if (!archive) {
      throw new TendError(
        'TEND_ARCHIVE',
        `the job asks for an archive of ${it} before its deletion, and this executor cannot send one; not deleted`,
      );
    }
    await archive(
      await cleanup.archive(plain, target, resource, { withSecrets: job.archive === 'with-secrets' }),
    );
  }
  const result: CleanupActionResult | undefined = await act(plain, target, resource, {
    uid: resource.uid,
    version: resource.version,
  });
  switch (result?.outcome) {
    case 'done':
    case 'gone':
      return { outcome: 'done', message: String(result.message) };
    case 'changed':
      return cancelled(String(result.message));
    default:
      throw new TendError(
        'TEND_PLUGIN_INVALID',
        `plugin ${ctx.provider.name}: its ${action} of ${it} answered ${JSON.stringify(result)?.slice(0, 200)}, not {outcome: done|gone|changed, message}`,
      );
  }
}

/** Why the resource as read now is not the job's to act on; undefined when every check passes. */
function refusalOf(
  resource: CleanupResource,
  job: QueuedCleanupJob,
  words: { resource: string; target: string },
): string | undefined {
  if (resource.name !== job.namespaceName) return `the plugin read ${resource.name} for it`;
  if (resource.adopted) return 'it existed before tend used it (adopted)';
  if (!resource.managedByTend) return 'it is not managed by tend (not marked as tend’s)';
  if (resource.role === 'system') return `it is a tend system ${words.resource}`;
  if (resource.project !== job.project) return `it belongs to project "${resource.project ?? '(none)'}"`;
  if (resource.environment !== job.environment)
    return `it belongs to environment "${resource.environment ?? '(none)'}", not "${job.environment}"`;
  if (resource.uid !== job.namespaceUid)
    return `it was re-created (uid ${resource.uid}, the recorded one is ${job.namespaceUid})`;
  if (job.ownership?.proof === 'claim') {
    const outside = createdOutside(resource.createdAt, job.ownership, words.target);
    if (outside) return outside;
  }
  if (job.action !== 'delete' && resource.state !== 'active') return `it is ${resource.state}`;
  // Resuming restores what tend paused: use since the decision does not stand in its way.
  if (job.action !== 'resume' && resource.lastActivityAt !== undefined) {
    if (Date.parse(resource.lastActivityAt) > Date.parse(job.expectedLastActivityAt))
      return `it was used at ${resource.lastActivityAt}, after the decision (activity ${job.expectedLastActivityAt})`;
  }
  return undefined;
}

/**
 * Why the target's creation time of a resource contradicts the claim that tend created it:
 * before the claiming session started, or after the server received the claim (each bound
 * already widened by the server's tolerance); undefined when it agrees, or when the target does
 * not say when it created its resources (the record alone proves them).
 */
function createdOutside(
  createdAt: string | undefined,
  window: { createdFrom: string; createdUntil: string },
  targetWord: string,
): string | undefined {
  const from = Date.parse(window.createdFrom);
  const until = Date.parse(window.createdUntil);
  if (!Number.isFinite(from) || !Number.isFinite(until))
    return `the window of the claim that tend created it (${window.createdFrom} to ${window.createdUntil}) is not a time`;
  if (createdAt === undefined) return undefined;
  const created = Date.parse(createdAt);
  if (created < from) {
    return `the ${targetWord} created it at ${createdAt}, before the session that claims to have created it started (${window.createdFrom} with the clock skew tolerated)`;
  }
  if (created > until) {
    return `the ${targetWord} created it at ${createdAt}, after the server received the claim that tend created it (${window.createdUntil} with the clock skew tolerated)`;
  }
  return undefined;
}

function describeInvalid(resource: unknown): string {
  const first = [...Value.Errors(CleanupResourceSchema, resource)][0];
  return first ? `${first.instancePath || '/'} ${first.message}` : 'not an object';
}
