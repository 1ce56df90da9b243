/**
 * The cleanup conformance kit's checks of what the plugin's acting primitives do when every
 * check passes: pause and resume, archive before a deletion, restore from the archive, and delete.
 */
import type { EnvironmentArchive } from '../cleanup/archive.js';
import type { CleanupResource } from '../plugin/types.js';
import type { RecordedResource } from './cleanup-bench.js';
import {
  describeResource,
  expectUnchanged,
  listedItem,
  type ConformanceRun,
} from './cleanup-conformance-checks.js';
import {
  describeError,
  NotApplicable,
  runCheck,
  type CleanupCheckResult,
  type Findings,
} from './cleanup-findings.js';

/** The deletion the plugin reported: a status event `missing`/`deleted` for the resource since `from`. */
function reportedDeleted(run: ConformanceRun, from: number, resource: RecordedResource): boolean {
  return run.bench.reported
    .slice(from)
    .some((e) => e.namespaceName === resource.name && e.state === 'missing' && e.cause === 'deleted');
}

async function expectNotListed(f: Findings, run: ConformanceRun, resource: RecordedResource, what: string) {
  const inventory = await run.bench.inventory();
  const item = listedItem(inventory, resource);
  f.expect(item?.uid !== resource.uid, `inventory() still lists ${describeResource(resource)} after ${what}`);
}

/** 7. Pause → done, resume → done, the uid unchanged; a resume of a resource not paused harms nothing. */
export function checkPauseResume(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('pause-resume', async (f) => {
    const { bench } = run;
    const { pause, resume } = bench.cleanup;
    if (!pause && !resume) return new NotApplicable('the plugin has no pause or resume primitive');
    if (
      !f.expect(
        pause !== undefined && resume !== undefined,
        `the plugin has ${pause ? 'pause' : 'resume'} without ${pause ? 'resume' : 'pause'}`,
      )
    )
      return '';
    const { recorded, now } = await bench.ensure(run.first);
    run.first = recorded;
    const step = async (action: 'pause' | 'resume', what: string) => {
      const result = await bench.verifyAndClean(bench.job(recorded, { action }));
      f.expect(
        result.outcome === 'done',
        `${what} of ${recorded.name} ended ${result.outcome}: ${result.message}`,
      );
      const after = await bench.read(bench.refOf(recorded));
      f.expect(
        after?.uid === now.uid,
        `${what} left ${recorded.name} ${after ? `with uid ${after.uid}` : 'gone'}, not uid ${now.uid}`,
      );
    };
    await step('pause', 'a pause job');
    await step('resume', 'a resume job');
    // A resume of a resource not paused: no harm (whatever it answers, the resource stays).
    const again = await bench
      .verifyAndClean(bench.job(recorded, { action: 'resume' }))
      .catch((error: unknown) => error as Error);
    f.expect(
      !(again instanceof Error),
      `a resume job of ${recorded.name}, not paused, threw ${describeError(again)}`,
    );
    const after = await bench.read(bench.refOf(recorded));
    f.expect(after?.uid === now.uid, `a resume job of ${recorded.name}, not paused, removed or replaced it`);
    return `a pause job and a resume job are done with ${recorded.name}'s uid unchanged; a resume of it not paused leaves it as it is`;
  });
}

/** 8a. A deletion that asks for an archive: archived (stored through ctx.archive), then deleted and unlisted. */
export function checkArchive(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('archive', async (f) => {
    const { bench } = run;
    if (!bench.cleanup.archive)
      return new NotApplicable('the plugin has no archive primitive: it deletes without one');
    const { recorded } = await bench.ensure(run.first);
    run.first = recorded;
    let stored: EnvironmentArchive | undefined;
    const result = await bench.verifyAndClean(bench.job(recorded, { archive: 'with-secrets' }), {
      confirm: async () => undefined,
      archive: async (archive) => void (stored = archive),
    });
    f.expect(
      result.outcome === 'done',
      `a deletion of ${recorded.name} with an archive ended ${result.outcome}: ${result.message}`,
    );
    f.expect(stored !== undefined, `the deletion of ${recorded.name} stored no archive`);
    await expectNotListed(f, run, recorded, 'its deletion');
    if (stored) run.archived = { archive: stored, of: recorded };
    return `a deletion of ${recorded.name} that asks for an archive stores one through ctx.archive, then deletes it (gone from the inventory)`;
  });
}

/** 8b. A restore job from that archive re-creates the resource (a new uid, listed); into a name that exists, refused. */
export function checkRestore(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('restore', async (f) => {
    const { bench } = run;
    if (!bench.cleanup.restore) return new NotApplicable('the plugin has no restore primitive');
    if (!bench.cleanup.archive)
      return new NotApplicable('the plugin has no archive primitive to restore from');
    if (!f.expect(run.archived !== undefined, 'no archive to restore from (the archive check failed)'))
      return '';
    const { archive, of } = run.archived!;
    const from = bench.reported.length;
    const restoreJob = () => bench.job(of, { action: 'restore' });
    const result = await bench.restore(restoreJob(), { archive, missingSecrets: [] });
    f.expect(
      result.namespace === of.name,
      `the restore job restored into ${result.namespace}, not ${of.name}`,
    );
    const created = bench.reported
      .slice(from)
      .find((e) => e.namespaceName === of.name && e.cause === 'created' && e.namespaceUid !== undefined);
    if (
      !f.expect(
        created !== undefined,
        `the restore of ${of.name} reported no status event created with a uid`,
      )
    )
      return '';
    const uid = created!.namespaceUid!;
    f.expect(uid !== of.uid, `the restored ${of.name} has the deleted one's uid ${uid}`);
    const restored: RecordedResource = { ...of, uid, target: created!.target as Record<string, unknown> };
    run.first = restored;
    f.expect(
      listedItem(await bench.inventory(), restored)?.uid === uid,
      `inventory() does not list the restored ${of.name} (uid ${uid})`,
    );
    const read = await bench.read(bench.refOf(restored));
    f.expect(
      read?.uid === uid,
      `read() of the restored ${of.name} is ${read ? `uid ${read.uid}` : 'undefined'}, not uid ${uid}`,
    );
    const refusal = await bench.restore(restoreJob(), { archive, missingSecrets: [] }).then(
      (again) => new Error(`restored into ${again.namespace} again`),
      (error: unknown) => error as Error,
    );
    f.expect(
      (refusal as { code?: unknown }).code === 'TEND_ARCHIVE',
      `a restore into ${of.name}, which exists, is not refused with TEND_ARCHIVE: ${describeError(refusal)}`,
    );
    if (read) await expectUnchanged(f, bench, restored, read, `a restore into ${of.name}, which exists,`);
    return `a restore job re-creates ${of.name} from its archive (reported created, uid ${uid}, listed again); a restore into it while it exists is refused (TEND_ARCHIVE)`;
  });
}

/** 9. Delete with the precondition just read: done, reported, gone for read; again: gone. */
export function checkDelete(run: ConformanceRun): Promise<CleanupCheckResult> {
  return runCheck('delete', async (f) => {
    const { bench } = run;
    const { recorded, now } = await bench.ensure(run.second);
    run.second = recorded;
    const from = bench.reported.length;
    const precondition = { uid: now.uid, version: now.version };
    const first = await bench.act('delete', now, precondition);
    f.expect(
      first.outcome === 'done',
      `delete of ${recorded.name} with its precondition answered ${first.outcome}: ${first.message}`,
    );
    f.expect(
      reportedDeleted(run, from, recorded),
      `delete of ${recorded.name} reported no status event missing/deleted`,
    );
    const read: CleanupResource | undefined = await bench.read(bench.refOf(recorded));
    f.expect(
      read === undefined,
      `read() of ${recorded.name} after its deletion returned uid ${read?.uid}, not undefined`,
    );
    const again = await bench.act('delete', now, precondition).catch((error: unknown) => error as Error);
    f.expect(
      !(again instanceof Error) && again.outcome === 'gone',
      `delete of ${recorded.name} again ${again instanceof Error ? `threw ${describeError(again)}` : `answered ${again.outcome}: ${again.message}`}, not gone`,
    );
    await expectNotListed(f, run, recorded, 'its deletion');
    return `delete of ${recorded.name} with its precondition is done (reported missing/deleted), read() finds nothing, and a second delete answers gone`;
  });
}
