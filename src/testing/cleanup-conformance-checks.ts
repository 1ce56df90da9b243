/**
 * The cleanup conformance kit's checks of what the plugin lists and reads, and of the jobs that
 * must change nothing: targets, inventory, read, preconditions, dry run, protection and hostile
 * jobs. Each starts from the environment's resource as it is (re-created when an earlier check
 * left it gone), so that one broken primitive fails its own check.
 */
import { Value } from 'typebox/value';
import { namespaceProtector } from '../cleanup/protection.js';
import { CleanupResource as CleanupResourceSchema } from '../cleanup/protocol.js';
import type { EnvironmentArchive } from '../cleanup/archive.js';
import type {
  CleanupActionResult,
  CleanupInventory,
  CleanupResource,
  QueuedCleanupJob,
} from '../plugin/types.js';
import { actingPrimitives, CleanupBench, type RecordedResource } from './cleanup-bench.js';
import { describeError, runCheck, type CleanupCheckResult, type Findings } from './cleanup-findings.js';

/** What the checks share: the bench, and the two environments' resources as they are now. */
export interface ConformanceRun {
  bench: CleanupBench;
  plugin: string;
  first: RecordedResource;
  second: RecordedResource;
  /** A resource the plugin adopted (`options.adopted`), for a hostile job. */
  adopted?: RecordedResource;
  /** The archive the `archive` check stored before its deletion, for the `restore` check. */
  archived?: { archive: EnvironmentArchive; of: RecordedResource };
}

const hour = 3_600_000;

/** The fields that say which resource an item is and what tend knows of it. */
const identityFields = [
  'name',
  'uid',
  'version',
  'state',
  'managedByTend',
  'project',
  'environment',
  'role',
  'adopted',
  'createdAt',
] as const;

export function describeResource(resource: RecordedResource): string {
  return `${resource.name} (environment ${resource.environment}, uid ${resource.uid})`;
}

/** The inventory's entry for the resource: by name and uid, else by name alone. */
export function listedItem(inventory: CleanupInventory, resource: RecordedResource) {
  const named = inventory.items.filter((item) => item.name === resource.name);
  return named.find((item) => item.uid === resource.uid) ?? named[0];
}

function invalidItem(item: unknown): string | undefined {
  if (Value.Check(CleanupResourceSchema, item)) return undefined;
  const first = [...Value.Errors(CleanupResourceSchema, item)][0];
  return first ? `${first.instancePath || '/'} ${first.message}` : 'not an object';
}

/** Read again after `what`: the resource must be there with the same uid and version. */
export async function expectUnchanged(
  f: Findings,
  bench: CleanupBench,
  resource: RecordedResource,
  before: CleanupResource,
  what: string,
): Promise<void> {
  const after = await bench.read(bench.refOf(resource));
  if (!f.expect(after !== undefined, `${what} removed ${resource.name}`)) return;
  f.expect(
    after!.uid === before.uid && after!.version === before.version,
    `${what} changed ${resource.name}: uid ${before.uid} version ${before.version} before, uid ${after!.uid} version ${after!.version} after`,
  );
}

/** 1a. `targets()` serves the target the status events name, under the same key. */
export function checkTargets(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('targets', async (f) => {
    const key = CleanupBench.targetKeyOf(run.first);
    if (
      !f.expect(
        key !== undefined,
        `the events' target ${JSON.stringify(run.first.target)} names no target key`,
      )
    )
      return '';
    const secondKey = CleanupBench.targetKeyOf(run.second);
    f.expect(secondKey === key, `the two environments' events name two targets: ${key} and ${secondKey}`);
    const targets = await run.bench.targets();
    const matching = targets.filter((t) => t.targetKey === key);
    const listed = targets.map((t) => t.targetKey).join(', ') || 'none';
    f.expect(
      matching.length === 1,
      `targets() returned ${matching.length} target(s) keyed ${key}, the target the events name (it returned: ${listed})`,
    );
    const target = matching[0];
    if (target) {
      f.expect(
        target.pluginName === run.plugin,
        `target ${key} says plugin ${target.pluginName}, not ${run.plugin}`,
      );
      run.bench.target = target;
    }
    return `targets() serves ${key}, the target the events name`;
  });
}

/** 1b. `inventory()` is complete and lists both environments' resources as tend's, as recorded. */
export function checkInventory(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('inventory', async (f) => {
    const inventory = await run.bench.inventory();
    f.expect(
      inventory.complete,
      `inventory() is not complete${inventory.error ? ` (${inventory.error})` : ''}`,
    );
    for (const item of inventory.items) {
      const invalid = invalidItem(item);
      f.expect(invalid === undefined, `inventory() lists an item that is not an inventory item (${invalid})`);
    }
    for (const resource of [run.first, run.second]) {
      const item = listedItem(inventory, resource);
      const complete = inventory.complete ? ', yet the inventory says it is complete' : '';
      if (!f.expect(item !== undefined, `inventory() does not list ${describeResource(resource)}${complete}`))
        continue;
      const it = `inventory() lists ${resource.name}`;
      f.expect(
        item!.uid === resource.uid,
        `${it} with uid ${item!.uid}; its events recorded ${resource.uid}`,
      );
      f.expect(item!.managedByTend, `${it} as not managed by tend`);
      f.expect(
        item!.project === resource.project,
        `${it} for project ${item!.project ?? '(none)'}, not ${resource.project}`,
      );
      f.expect(
        item!.environment === resource.environment,
        `${it} for environment ${item!.environment ?? '(none)'}, not ${resource.environment}`,
      );
    }
    return `inventory() is complete and lists ${run.first.name} and ${run.second.name} as tend's, with their recorded uid, project and environment`;
  });
}

/** 2. `read()` agrees with the inventory on identity, and finds nothing under a name that does not exist. */
export function checkRead(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('read', async (f) => {
    const { bench, first } = run;
    const item = listedItem(await bench.inventory(), first);
    const read = await bench.read(bench.refOf(first));
    if (f.expect(read !== undefined, `read() of ${first.name} is undefined, yet it exists`)) {
      const invalid = invalidItem(read);
      f.expect(invalid === undefined, `read() of ${first.name} is not an inventory item (${invalid})`);
      const differ = item ? identityFields.filter((field) => read![field] !== item[field]) : [];
      f.expect(
        differ.length === 0,
        `read() of ${first.name} differs from its inventory entry in ${differ
          .map((field) => `${field} (${String(read![field])} vs ${String(item![field])})`)
          .join(', ')}`,
      );
    }
    const absent = bench.absentRefOf(first);
    const found = await bench.read(absent);
    f.expect(
      found === undefined,
      `read() of ${absent.name}, which does not exist, returned ${JSON.stringify(found)?.slice(0, 200)}`,
    );
    return `read() of ${first.name} equals its inventory entry on identity; read() of ${absent.name}, which does not exist, is undefined`;
  });
}

/** The answer of an acting primitive given a precondition that does not hold: `changed`, nothing else. */
function expectChanged(f: Findings, what: string, answer: CleanupActionResult | Error): void {
  const said =
    answer instanceof Error
      ? `threw ${describeError(answer)}`
      : `answered ${answer.outcome}: ${answer.message}`;
  f.expect(!(answer instanceof Error) && answer.outcome === 'changed', `${what} ${said}, not changed`);
}

/** 3. `delete` (and `pause`/`resume`) with another uid, or a stale version: `changed`, nothing done. */
export function checkPreconditions(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('preconditions', async (f) => {
    const { bench } = run;
    const actions = (['delete', 'pause', 'resume'] as const).filter(
      (a) => a === 'delete' || bench.cleanup[a],
    );
    let versionUnchanged = false;
    for (const action of actions) {
      let { recorded, now } = await bench.ensure(run.first);
      run.first = recorded;
      const otherUid = `${now.uid}-other`;
      const wrongUid = await bench
        .act(action, now, { uid: otherUid, version: now.version })
        .catch((e: Error) => e);
      expectChanged(f, `${action} of ${recorded.name} with another uid (${otherUid})`, wrongUid);
      await expectUnchanged(f, bench, recorded, now, `${action} with another uid`);

      // A stale version: read, then the resource changed (a command used it), then the action
      // with what was read before — the race the precondition is for.
      ({ recorded, now } = await bench.ensure(run.first));
      run.first = recorded;
      await bench.change(recorded);
      const fresh = await bench.read(bench.refOf(recorded));
      if (!f.expect(fresh?.uid === now.uid, `${recorded.name} was re-created when it was changed`)) continue;
      if (fresh!.version === now.version) {
        versionUnchanged = true;
        continue;
      }
      const stale = await bench
        .act(action, now, { uid: now.uid, version: now.version })
        .catch((e: Error) => e);
      expectChanged(
        f,
        `${action} of ${recorded.name} with a stale version (${now.version}, now ${fresh!.version})`,
        stale,
      );
      await expectUnchanged(f, bench, recorded, fresh!, `${action} with a stale version`);
    }
    const stale = versionUnchanged ? '' : ' and with a stale version';
    const noStale = versionUnchanged
      ? '; no stale version could be made (the version did not change when the resource was changed: give options.changeResource)'
      : '';
    return `${actions.join(', ')} with another uid${stale} answer changed and leave the resource as it was${noStale}`;
  });
}

/** 4. A dry-run job through the framework's checks passes every check and changes nothing. */
export function checkDryRun(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('dry-run', async (f) => {
    const { bench } = run;
    const actions = bench.cleanup.pause ? (['delete', 'pause'] as const) : (['delete'] as const);
    for (const action of actions) {
      const { recorded, now } = await bench.ensure(run.first);
      run.first = recorded;
      const mark = bench.mark();
      let stored = 0;
      const archive = action === 'delete' && bench.cleanup.archive ? 'with-secrets' : 'none';
      const result = await bench.verifyAndClean(bench.job(recorded, { action, dryRun: true, archive }), {
        archive: async () => void stored++,
        confirm: async () => undefined,
      });
      f.expect(
        result.outcome === 'cancelled' && /^dry run: .*passed every check/.test(result.message),
        `a dry-run ${action} job of ${recorded.name} ended ${result.outcome}: ${result.message}`,
      );
      const acted = bench.callsSince(mark, actingPrimitives) + stored;
      f.expect(
        acted === 0,
        `a dry-run ${action} job of ${recorded.name} called an acting primitive or stored an archive`,
      );
      await expectUnchanged(f, bench, recorded, now, `a dry-run ${action} job`);
    }
    return `dry-run ${actions.join(' and ')} jobs pass every check and change nothing`;
  });
}

/** A name each `--protect-namespace` glob protects: its wildcards filled in (none when that does not match). */
function namesProtectedBy(globs: readonly string[], systemName: string): string[] {
  return globs.flatMap((glob) => {
    const name = glob.replace(/[*?]+/g, 'x').replace(/[[\]{}!]/g, '');
    const protects =
      namespaceProtector({ systemNamespace: systemName, patterns: [glob] })(name) !== undefined;
    return protects ? [name] : [];
  });
}

/** 5. A job naming a protected name is cancelled before anything is read. */
export function checkProtection(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('protection', async (f) => {
    const { bench, first, second } = run;
    const names = [
      bench.protection.systemName,
      'kube-system',
      'default',
      ...namesProtectedBy(bench.protection.patterns, bench.protection.systemName),
    ];
    const refusedUnread = async (job: QueuedCleanupJob, protection = bench.protection) => {
      const mark = bench.mark();
      const result = await bench.verifyAndClean(job, {}, protection);
      f.expect(
        result.outcome === 'cancelled' && /protected/.test(result.message),
        `a job naming ${job.namespaceName} ended ${result.outcome}: ${result.message}`,
      );
      const calls = bench.callsSince(mark, ['read', ...actingPrimitives]);
      f.expect(calls === 0, `a job naming protected ${job.namespaceName} called read or an acting primitive`);
    };
    for (const name of names) await refusedUnread(bench.job({ ...first, name }));
    // A resource that exists, protected at this executor by its name: left unread and as it is.
    const { recorded, now } = await bench.ensure(second);
    run.second = recorded;
    const protection = {
      ...bench.protection,
      patterns: [...bench.protection.patterns, recorded.name],
    };
    await refusedUnread(bench.job(recorded), protection);
    await expectUnchanged(f, bench, recorded, now, `a job naming protected ${recorded.name}`);
    return `jobs naming ${[...names, recorded.name].join(', ')} (protected) are cancelled before read is called`;
  });
}

/** The recorded target with another id: another place of the same kind. */
function anotherTarget(target: Record<string, unknown>): Record<string, unknown> {
  const idField = target.kind === 'kubernetes' ? 'clusterId' : target.kind === 'local' ? 'hostId' : 'id';
  return { ...target, [idField]: `${String(target[idField])}-other` };
}

/** 6. Hostile jobs through the framework's checks: each cancelled, nothing changed. */
export function checkHostileJobs(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('hostile-jobs', async (f) => {
    const { bench } = run;
    const { recorded, now } = await bench.ensure(run.first);
    run.first = recorded;
    const cases: [string, Partial<QueuedCleanupJob>][] = [
      ["another target's key", { target: anotherTarget(recorded.target) }],
      ['a name with "/"', { namespaceName: `${recorded.name}/x` }],
      ['the name ".."', { namespaceName: '..' }],
      ['another project', { project: `${recorded.project}-other` }],
      ['another environment', { environment: `${recorded.environment}-other` }],
      ['another uid', { namespaceUid: `${recorded.uid}-other` }],
    ];
    const skipped: string[] = [];
    if (now.createdAt !== undefined) {
      const created = Date.parse(now.createdAt);
      const window = (from: number, until: number) => ({
        ownership: {
          proof: 'claim' as const,
          createdFrom: new Date(from).toISOString(),
          createdUntil: new Date(until).toISOString(),
        },
      });
      cases.push([
        'a claim of creation before the target created it',
        window(created - 2 * hour, created - hour),
      ]);
      cases.push([
        'a claim of creation after the target created it',
        window(created + hour, created + 2 * hour),
      ]);
    } else skipped.push('no claim windows (the target reports no createdAt)');
    if (now.lastActivityAt !== undefined) {
      const before = new Date(Date.parse(now.lastActivityAt) - 60_000).toISOString();
      cases.push(["activity after the plan's", { expectedLastActivityAt: before }]);
    } else skipped.push('no activity after the plan (the target reports no lastActivityAt)');
    for (const [what, changes] of cases) {
      const mark = bench.mark();
      const result = await bench.verifyAndClean(bench.job(recorded, changes));
      f.expect(
        result.outcome === 'cancelled',
        `a job with ${what} ended ${result.outcome}: ${result.message}`,
      );
      f.expect(
        bench.callsSince(mark, actingPrimitives) === 0,
        `a job with ${what} called an acting primitive`,
      );
    }
    await expectUnchanged(f, bench, recorded, now, 'the hostile jobs');
    if (run.adopted) {
      const adopted = await bench.read(bench.refOf(run.adopted));
      if (f.expect(adopted !== undefined, `read() does not find the adopted ${run.adopted.name}`)) {
        const mark = bench.mark();
        const result = await bench.verifyAndClean(bench.job(run.adopted));
        const what = `a job for the adopted ${run.adopted.name}`;
        f.expect(result.outcome === 'cancelled', `${what} ended ${result.outcome}: ${result.message}`);
        f.expect(bench.callsSince(mark, actingPrimitives) === 0, `${what} called an acting primitive`);
        await expectUnchanged(f, bench, run.adopted, adopted!, what);
        cases.push(['an adopted resource', {}]);
      }
    } else skipped.push('no adopted resource (options.adopted not given)');
    const notTried = skipped.length > 0 ? `; ${skipped.join('; ')}` : '';
    return `jobs with ${cases.map(([what]) => what).join(', ')} are cancelled and change nothing${notTried}`;
  });
}
