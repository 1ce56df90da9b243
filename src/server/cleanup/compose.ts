/**
 * The server's cleanup, put together once over one database: the cleanup repositories, the job
 * queue executors talk to, the planning pass and the switches people use. `buildServer` composes
 * it for its services; a test composes another to play a second replica.
 */
import type { Kysely } from 'kysely';
import { CleanupControlRepository } from '../db/repositories/cleanup-control.js';
import { CleanupDecisionRepository } from '../db/repositories/cleanup-decisions.js';
import { CleanupInventoryRepository } from '../db/repositories/cleanup-inventories.js';
import { CleanupJobRepository } from '../db/repositories/cleanup-jobs.js';
import { ArchiveRepository } from '../db/repositories/archives.js';
import { EnvironmentRepository } from '../db/repositories/environments.js';
import { isSqlite } from '../db/dialect.js';
import type { Database } from '../db/schema.js';
import type { Metrics } from '../metrics.js';
import { ArchiveStore } from './archives.js';
import { clockDisagreement, PlanningClock, type WallClock } from './clock.js';
import { PlanningPass } from './pass.js';
import { DatabaseCleanupQueue } from './queue.js';
import { RestoreJobs } from './restores.js';
import { namespaceProtector } from '../../cleanup/protection.js';
import type { CleanupSettings } from './settings.js';
import { CleanupSwitches } from './switches.js';

export interface ServerCleanup {
  settings: CleanupSettings;
  jobs: CleanupJobRepository;
  inventories: CleanupInventoryRepository;
  control: CleanupControlRepository;
  decisions: CleanupDecisionRepository;
  /** What every executor talks to: in process (the embedded executor) or through the agent routes. */
  queue: DatabaseCleanupQueue;
  /** The planning loop runs it every interval. */
  pass: PlanningPass;
  /** Planning time, which a step of the wall clock does not move (clock.ts). */
  clock: PlanningClock;
  switches: CleanupSwitches;
  /** The archives executors store before deleting, for `tend restore`. */
  archives: ArchiveStore;
  /** Restores the executors run (the dashboard's Restore button). */
  restores: RestoreJobs;
}

/** `reader` serves the reads outside a transaction (ServerDatabase.reader). */
export function composeCleanup(
  db: Kysely<Database>,
  reader: Kysely<Database>,
  metrics: Metrics,
  /** The planning clock; a plain clock (a second replica in a test) is one that never steps. */
  clockOrNow: PlanningClock | (() => Date),
  settings: CleanupSettings,
): ServerCleanup {
  const clock =
    clockOrNow instanceof PlanningClock
      ? clockOrNow
      : new PlanningClock(clockOrNow, () => clockOrNow().getTime());
  // Everything cleanup decides and records is on planning time: consistent across the pass, the
  // queue's re-checks and leases, and the switches.
  const now = () => clock.now();
  const control = new CleanupControlRepository(db, reader);
  const wallClock: WallClock = {
    wall: () => new Date(clock.wallNow()),
    disagreement: async () =>
      clockDisagreement(
        clock.wallNow(),
        await control.clockAnchors({ database: clock.host.checkDatabase === true }),
      ),
  };
  const jobs = new CleanupJobRepository(db, reader);
  const inventories = new CleanupInventoryRepository(db, reader);
  const decisions = new CleanupDecisionRepository(db, reader);
  const archives = new ArchiveStore(new ArchiveRepository(db, reader), metrics, settings.archive);
  const restores = new RestoreJobs(
    db,
    isSqlite(db) ? 'sqlite' : 'postgres',
    jobs,
    new EnvironmentRepository(db, reader),
    archives,
    inventories,
    now,
    namespaceProtector({ systemNamespace: settings.systemNamespace, patterns: settings.protectPatterns }),
  );
  const queue = new DatabaseCleanupQueue(
    db,
    reader,
    jobs,
    inventories,
    archives,
    restores,
    metrics,
    now,
    settings,
    wallClock,
  );
  return {
    settings,
    jobs,
    inventories,
    control,
    decisions,
    queue,
    pass: new PlanningPass(db, reader, jobs, control, decisions, metrics, clock, wallClock, settings),
    clock,
    switches: new CleanupSwitches(db, jobs, control, queue, metrics, now, settings),
    archives,
    restores,
  };
}
